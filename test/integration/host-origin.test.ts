/**
 * DNS rebinding and cross-site WebSockets, played as the attacker would: requests that name a
 * foreign Host (a page of evil.example whose name now points at the gateway), and sockets whose
 * Origin is a foreign page, against the real gateway on port 0.
 */
import { test, type TestContext } from 'node:test'
import assert from 'node:assert/strict'
import { request as httpRequest } from 'node:http'
import { connect } from 'node:net'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { deepMerge, loadConfig } from '../../src/core/config.js'
import { buildServer } from '../../src/app/server.js'
import { startGateway, TestSocket, type TestGateway } from '../helpers/gateway.js'
import { captureLogs } from '../helpers/log-capture.js'
import { jwtAuth, mintToken } from '../helpers/tokens.js'

interface RawAnswer { status: number, body: any, headers: Record<string, string | string[] | undefined> }

/** One HTTP/1.1 request with exactly the Host header given (fetch does not let a caller choose it). */
async function withHost (g: TestGateway, path: string, host: string, method = 'GET', body?: unknown): Promise<RawAnswer> {
  const { port } = new URL(g.url)
  return await new Promise((resolve, reject) => {
    const headers: Record<string, string> = { host }
    if (body !== undefined) headers['content-type'] = 'application/json'
    const req = httpRequest({ host: '127.0.0.1', port, path, method, headers, setHost: false }, (res) => {
      const parts: Buffer[] = []
      res.on('data', (c: Buffer) => parts.push(c))
      res.on('end', () => {
        const text = Buffer.concat(parts).toString('utf8')
        let parsed: unknown = text
        try {
          parsed = JSON.parse(text)
        } catch {}
        resolve({ status: res.statusCode ?? 0, body: parsed, headers: res.headers })
      })
    })
    req.on('error', reject)
    req.end(body === undefined ? undefined : JSON.stringify(body))
  })
}

function portOf (g: TestGateway): string {
  return new URL(g.url).port
}

async function gateway (t: TestContext, overrides: unknown = {}, logger?: ReturnType<typeof captureLogs>['logger']): Promise<TestGateway> {
  const g = await startGateway({ overrides, ...(logger === undefined ? {} : { logger }) })
  t.after(() => g.close())
  return g
}

function refusedHost (answer: RawAnswer): boolean {
  const problem = String(answer.headers['content-type']).startsWith('application/problem+json')
  return answer.status === 421 && answer.body.code === 'HOST_NOT_ALLOWED' && problem
}

type Refusal = { statusCode: number, body: any }

async function upgradeRefusal (g: TestGateway, headers: Record<string, string>, protocols = ['tollgate.v1']): Promise<Refusal> {
  try {
    const socket = await TestSocket.open(g.wsUrl, protocols, headers)
    socket.close()
  } catch (err) {
    return err as Refusal
  }
  throw new Error('the upgrade was accepted')
}

test('a request naming a foreign Host is refused with 421 HOST_NOT_ALLOWED problem JSON on the default config', async (t) => {
  const logs = captureLogs('info')
  const g = await gateway(t, {}, logs.logger)
  const answer = await withHost(g, '/v1/tools', `evil.example:${portOf(g)}`)
  assert.ok(refusedHost(answer), JSON.stringify(answer))
  assert.equal(answer.body.status, 421)
  assert.match(answer.body.detail, /evil\.example/)
  assert.ok(logs.lines().some((l) => l.audit === 'host_refused' && l.host === `evil.example:${portOf(g)}`))
})

test('a rebinding page cannot start a turn: the refusal comes before the route runs', async (t) => {
  const g = await gateway(t)
  g.provider.enqueue({ text: 'should never be asked' })
  const answer = await withHost(g, '/v1/turns', `evil.example:${portOf(g)}`, 'POST', { message: 'run id -un' })
  assert.ok(refusedHost(answer), JSON.stringify(answer))
  assert.equal(g.provider.requests.length, 0)
})

test('the Host check covers the browser page, the API documents, health, metrics and unknown routes', async (t) => {
  const g = await gateway(t)
  for (const path of ['/', '/ui/app.js', '/openapi.yaml', '/asyncapi.yaml', '/healthz', '/readyz', '/metrics', '/no/such/route']) {
    assert.ok(refusedHost(await withHost(g, path, 'evil.example')), path)
  }
})

test('loopback names and addresses are served on a loopback bind', async (t) => {
  const g = await gateway(t)
  const port = portOf(g)
  for (const host of [`127.0.0.1:${port}`, `localhost:${port}`, 'LOCALHOST', 'localhost.', `127.9.8.7:${port}`, `[::1]:${port}`]) {
    assert.equal((await withHost(g, '/v1/tools', host)).status, 200, host)
  }
})

test('malformed Host headers are refused', async (t) => {
  const g = await gateway(t)
  const port = portOf(g)
  const malformed = [`evil.example@127.0.0.1:${port}`, `127.0.0.1.evil.example:${port}`, '127.evil.example', '[1.2.3.4]', `localhost:${port}:1`, '']
  for (const host of malformed) {
    assert.ok(refusedHost(await withHost(g, '/healthz', host)), JSON.stringify(host))
  }
})

test('an HTTP/1.0 request without a Host header is refused', async (t) => {
  const g = await gateway(t)
  const socket = connect(Number(portOf(g)), '127.0.0.1')
  socket.end('GET /healthz HTTP/1.0\r\n\r\n')
  const parts: Buffer[] = []
  for await (const chunk of socket) parts.push(chunk as Buffer)
  const [head, body] = Buffer.concat(parts).toString('utf8').split('\r\n\r\n')
  assert.match(String(head), /^HTTP\/1\.1 421 /)
  assert.equal(JSON.parse(String(body)).code, 'HOST_NOT_ALLOWED')
})

test('a rebinding page\'s WebSocket (Host and Origin evil.example) is refused before the upgrade', async (t) => {
  const g = await gateway(t)
  const refusal = await upgradeRefusal(g, { host: `evil.example:${portOf(g)}`, origin: `http://evil.example:${portOf(g)}` })
  assert.equal(refusal.statusCode, 421)
  assert.equal(refusal.body.code, 'HOST_NOT_ALLOWED')
})

test('a foreign page\'s WebSocket to the loopback address is refused on its Origin', async (t) => {
  const g = await gateway(t)
  const refusal = await upgradeRefusal(g, { origin: 'http://evil.example' })
  assert.equal(refusal.statusCode, 403)
  assert.equal(refusal.body.code, 'ORIGIN_NOT_ALLOWED')
})

test('an Origin is not trusted because it matches the Host header', async (t) => {
  const g = await gateway(t, { ...jwtAuth(), server: { allowed_hosts: ['gw.example'] } })
  const token = await mintToken()
  const refusal = await upgradeRefusal(g, { host: 'gw.example', origin: 'http://gw.example' }, ['tollgate.v1', `bearer.${token}`])
  assert.equal(refusal.statusCode, 403)
  assert.equal(refusal.body.code, 'ORIGIN_NOT_ALLOWED')
})

test('a socket from the gateway\'s own loopback origin on its real port opens', async (t) => {
  const g = await gateway(t)
  const port = portOf(g)
  for (const origin of [`http://127.0.0.1:${port}`, `http://localhost:${port}`, `http://[::1]:${port}`]) {
    const socket = await TestSocket.open(g.wsUrl, ['tollgate.v1'], { origin })
    assert.equal((await socket.request({ type: 'ping' })).type, 'pong', origin)
    socket.close()
  }
  const otherPort = await upgradeRefusal(g, { origin: `http://127.0.0.1:${Number(port) === 1 ? 2 : Number(port) - 1}` })
  assert.equal(otherPort.body.code, 'ORIGIN_NOT_ALLOWED', 'another local port is another origin')
})

test('the origin of server.public_url may open a socket through its host', async (t) => {
  const g = await gateway(t, { ...jwtAuth(), server: { public_url: 'https://gw.example/' } })
  const token = await mintToken()
  const socket = await TestSocket.open(g.wsUrl, ['tollgate.v1', `bearer.${token}`], { host: 'gw.example', origin: 'https://gw.example' })
  assert.equal((await socket.request({ type: 'ping' })).type, 'pong')
  socket.close()
})

test('with jwt auth, server.host, allowed_hosts (exact and .suffix) and the public_url host are served, others are not', async (t) => {
  const server = { allowed_hosts: ['gw.example', '.corp.example', '10.0.0.7'], public_url: 'https://public.example:8443' }
  const g = await gateway(t, { ...jwtAuth(), server })
  for (const host of ['127.0.0.1', 'gw.example:443', 'GW.example', 'corp.example', 'api.corp.example', '10.0.0.7:80', 'public.example']) {
    assert.equal((await withHost(g, '/healthz', host)).status, 200, host)
  }
  for (const host of ['evil.example', 'gw.example.evil.example', 'xcorp.example', '10.0.0.8']) {
    assert.ok(refusedHost(await withHost(g, '/healthz', host)), host)
  }
})

test('a wildcard bind with jwt auth and no host list serves IP-address and loopback Hosts only, and warns at start', async (t) => {
  const logs = captureLogs('info')
  const g = await gateway(t, { ...jwtAuth(), server: { host: '0.0.0.0' } }, logs.logger)
  assert.ok(logs.lines().some((l) => l.level === 40 && /neither server\.allowed_hosts nor server\.public_url/.test(l.msg)))
  for (const host of ['10.1.2.3:8080', '[fd00::5]:8080', 'localhost:8080', '127.0.0.1']) {
    assert.equal((await withHost(g, '/readyz', host)).status, 200, host)
  }
  assert.ok(refusedHost(await withHost(g, '/readyz', 'gw.example')))
})

test('allowed_hosts = ["*"] serves any well-formed Host with jwt auth', async (t) => {
  const g = await gateway(t, { ...jwtAuth(), server: { allowed_hosts: ['*'] } })
  assert.equal((await withHost(g, '/healthz', 'anything.example')).status, 200)
  assert.ok(refusedHost(await withHost(g, '/healthz', 'a@b')))
})

async function buildWith (t: TestContext, overrides: unknown): Promise<unknown> {
  const dir = await mkdtemp(join(tmpdir(), 'tollgate-host-'))
  t.after(() => rm(dir, { recursive: true, force: true }))
  const base = { log: { level: 'silent' }, workspace: { dir }, store: { kind: 'memory' } }
  const config = loadConfig({ env: {}, overrides: deepMerge(base, overrides) })
  const gw = await buildServer({ config })
  await gw.close()
  return gw
}

test('auth mode none refuses to start when allowed_hosts, public_url or allowed_origins would widen it beyond loopback', async (t) => {
  await assert.rejects(buildWith(t, { server: { allowed_hosts: ['gw.example'] } }), /auth\.mode "none" serves loopback names only/)
  await assert.rejects(buildWith(t, { server: { allowed_hosts: ['*'] } }), /auth\.mode "none" serves loopback names only/)
  await assert.rejects(buildWith(t, { server: { public_url: 'https://gw.example' } }), /auth\.mode "none" serves loopback names only/)
  await assert.rejects(buildWith(t, { ws: { allowed_origins: ['*'] } }), /auth\.mode "none"/)
  await assert.rejects(buildWith(t, { ws: { allowed_origins: ['https://app.example'] } }), /auth\.mode "none"/)
  await buildWith(t, { server: { allowed_hosts: ['localhost', '127.0.0.2'] }, ws: { allowed_origins: ['http://localhost:5173'] } })
})

test('an allowed_hosts entry with a port or scheme is a configuration error', async (t) => {
  const withPort = buildWith(t, { ...jwtAuth(), server: { allowed_hosts: ['gw.example:8080'] } })
  await assert.rejects(withPort, /server\.allowed_hosts: "gw\.example:8080" is not a host name/)
  await assert.rejects(buildWith(t, { ...jwtAuth(), server: { allowed_hosts: ['https://gw.example'] } }), /server\.allowed_hosts/)
})
