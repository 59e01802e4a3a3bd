/**
 * auth.mode "generated": the token signed at start authenticates (HTTP and WebSocket), anything
 * else is refused as in jwt mode, a second start's token is not the first's, and the real process
 * started as in a container (TOLLGATE_AUTH_MODE=generated on 0.0.0.0) prints the token once.
 */
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { startGateway } from '../helpers/gateway.js'
import { mintToken } from '../helpers/tokens.js'
import { eventually } from '../helpers/eventually.js'

const REPO = fileURLToPath(new URL('../..', import.meta.url))

test('the token signed at start is the only way in: it reads the API and opens a socket; no token and a forged one are 401', async (t) => {
  const g = await startGateway({ overrides: { auth: { mode: 'generated' } } })
  t.after(() => g.close())
  const start = g.gateway.auth.startToken
  assert.ok(start !== undefined)
  const ok = await g.http('GET', '/v1/sessions', undefined, { authorization: `Bearer ${start.token}` })
  assert.equal(ok.status, 200)
  assert.equal((await g.http('GET', '/v1/sessions', undefined, {})).body.code, 'UNAUTHENTICATED')
  const forged = await mintToken({ tenant: 'local', key: new TextEncoder().encode('x'.repeat(64)) })
  assert.equal((await g.http('GET', '/v1/sessions', undefined, { authorization: `Bearer ${forged}` })).status, 401)
  const ws = await g.socket({ protocols: ['tollgate.v1', `bearer.${start.token}`] })
  assert.equal((await ws.request({ type: 'hello' })).type, 'welcome')
  const expires = Date.parse(start.expiresAt) - Date.now()
  assert.ok(expires > 11.9 * 3600_000 && expires <= 12 * 3600_000, `valid 12 h by default, got ${expires} ms`)

  const other = await startGateway({ overrides: { auth: { mode: 'generated' } } })
  t.after(() => other.close())
  assert.notEqual(other.gateway.auth.startToken?.token, start.token)
  assert.equal((await other.http('GET', '/v1/sessions', undefined, { authorization: `Bearer ${start.token}` })).status, 401)
})

test('started like a container (TOLLGATE_AUTH_MODE=generated, 0.0.0.0), the process prints its token once and the token works', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'tollgate-generated-'))
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], {
    cwd: REPO,
    env: {
      PATH: process.env.PATH, TOLLGATE_AUTH_MODE: 'generated', TOLLGATE_HOST: '0.0.0.0', TOLLGATE_PORT: '0',
      TOLLGATE_SQLITE_PATH: join(dir, 'tollgate.db'), TOLLGATE_WORKSPACE: join(dir, 'workspace'), TOLLGATE_LOG_LEVEL: 'info'
    },
    stdio: ['ignore', 'pipe', 'pipe']
  })
  t.after(async () => {
    if (child.exitCode === null) child.kill('SIGKILL')
    await rm(dir, { recursive: true, force: true })
  })
  let stdout = ''
  let stderr = ''
  child.stdout.on('data', (c: Buffer) => { stdout += c.toString('utf8') })
  const token = await new Promise<string>((resolve, reject) => {
    child.stderr.on('data', (c: Buffer) => {
      stderr += c.toString('utf8')
      const m = /\n\n {2}(eyJ[\w-]+\.[\w-]+\.[\w-]+)\n/.exec(stderr)
      if (m?.[1] !== undefined) resolve(m[1])
    })
    child.on('exit', () => { reject(new Error(`exited early:\n${stdout}\n${stderr}`)) })
  })
  await eventually(() => stdout.includes('tollgate listening on'), { what: 'the listening line' })
  const port = /tollgate listening on http:\/\/[^:]+:(\d+)/.exec(stdout)?.[1]
  assert.ok(port !== undefined, stdout)
  assert.ok(!stdout.includes(token), 'the token is not in the log')
  const res = await fetch(`http://127.0.0.1:${port}/v1/sessions`, { headers: { authorization: `Bearer ${token}` } })
  assert.equal(res.status, 200)
  assert.equal((await fetch(`http://127.0.0.1:${port}/v1/sessions`)).status, 401)
  assert.equal(stderr.split(token).length - 1, 1, 'printed once')
})
