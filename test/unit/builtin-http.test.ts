import { test } from 'node:test'
import assert from 'node:assert/strict'
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { pino } from 'pino'
import type { Tool, ToolContext } from '../../src/tools/contract.js'
import { createHttpRequestTool, type HttpOptions } from '../../src/tools/builtin/http-request.js'
import { createDestinationGuard, isPrivateAddress } from '../../src/tools/builtin/net-guard.js'

function context (signal: AbortSignal = new AbortController().signal): ToolContext {
  return { signal, turnId: 'turn-1', sessionId: 'session-1', callId: 'call-1', log: pino({ level: 'silent' }), workspaceDir: '/nonexistent', workspaceOwner: null, network: false }
}

function httpTool (overrides: Partial<HttpOptions> = {}): Tool {
  return createHttpRequestTool({
    allowHosts: [],
    allowPrivate: false,
    timeoutMs: 30000,
    maxResponseBytes: 524288,
    maxRedirects: 5,
    ...overrides
  })
}

interface Seen {
  method: string | undefined
  url: string | undefined
  headers: http.IncomingHttpHeaders
}

async function serve (
  t: { after: (fn: () => Promise<void>) => void },
  handler: http.RequestListener,
  host = '127.0.0.1'
): Promise<{ port: number, seen: Seen[] }> {
  const seen: Seen[] = []
  const server = http.createServer((req, res) => {
    seen.push({ method: req.method, url: req.url, headers: req.headers })
    handler(req, res)
  })
  await new Promise<void>((resolve) => server.listen(0, host, resolve))
  t.after(async () => {
    server.closeAllConnections()
    await new Promise<void>((resolve) => server.close(() => resolve()))
  })
  return { port: (server.address() as AddressInfo).port, seen }
}

const hello: http.RequestListener = (_req, res) => {
  res.writeHead(200, { 'content-type': 'text/plain' })
  res.end('hello')
}

const REFUSED_LOOPBACK = 'destination address is not allowed: 127.0.0.1 resolves to a private or loopback address'

test('http_request refuses a loopback destination by default', async (t) => {
  const { port, seen } = await serve(t, hello)
  const result = await httpTool().execute({ url: `http://127.0.0.1:${port}/` }, context())
  assert.deepEqual(result, { success: false, output: '', error: REFUSED_LOOPBACK })
  assert.equal(seen.length, 0)
})

test('http_request refuses a hostname that resolves to a loopback address', async (t) => {
  const { port, seen } = await serve(t, hello)
  const result = await httpTool().execute({ url: `http://localhost:${port}/` }, context())
  assert.equal(result.success, false)
  assert.equal(result.error, 'destination address is not allowed: localhost resolves to a private or loopback address')
  assert.equal(seen.length, 0)
})

test('http_request reaches a private address that allowHosts lists', async (t) => {
  const { port } = await serve(t, hello)
  const result = await httpTool({ allowHosts: ['127.0.0.1'] }).execute({ url: `http://127.0.0.1:${port}/greeting` }, context())
  assert.deepEqual(result, { success: true, output: 'HTTP 200 OK\ncontent-type: text/plain\n\nhello', error: null })
})

test('http_request reaches a private range that allowHosts lists as a CIDR', async (t) => {
  const { port } = await serve(t, hello)
  const result = await httpTool({ allowHosts: ['127.0.0.0/8'] }).execute({ url: `http://127.0.0.1:${port}/` }, context())
  assert.equal(result.success, true)
})

test('http_request reaches a hostname that allowHosts lists, case-insensitively', async (t) => {
  const { port } = await serve(t, hello)
  const result = await httpTool({ allowHosts: ['LocalHost'] }).execute({ url: `http://localhost:${port}/` }, context())
  assert.equal(result.success, true)
  assert.match(result.output, /hello$/)
})

test('http_request reaches private destinations when allowPrivate is set', async (t) => {
  const { port } = await serve(t, hello)
  const result = await httpTool({ allowPrivate: true }).execute({ url: `http://127.0.0.1:${port}/` }, context())
  assert.equal(result.success, true)
})

test('http_request sends the method, headers and body it is given', async (t) => {
  let received = ''
  const { port, seen } = await serve(t, (req, res) => {
    req.setEncoding('utf8')
    req.on('data', (chunk: string) => { received += chunk })
    req.on('end', () => res.writeHead(201).end())
  })
  const result = await httpTool({ allowHosts: ['127.0.0.1'] }).execute({
    url: `http://127.0.0.1:${port}/items`,
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-trace': 'abc' },
    body: '{"a":1}'
  }, context())
  assert.equal(result.output, 'HTTP 201 Created\ncontent-type: \n\n')
  assert.equal(seen[0]?.method, 'POST')
  assert.equal(seen[0]?.headers['x-trace'], 'abc')
  assert.equal(received, '{"a":1}')
})

test('http_request reports an error status as a failure with the response', async (t) => {
  const { port } = await serve(t, (_req, res) => res.writeHead(404, { 'content-type': 'text/plain' }).end('no such thing'))
  const result = await httpTool({ allowHosts: ['127.0.0.1'] }).execute({ url: `http://127.0.0.1:${port}/` }, context())
  assert.deepEqual(result, { success: false, output: 'HTTP 404 Not Found\ncontent-type: text/plain\n\nno such thing', error: 'HTTP 404' })
})

test('http_request follows a redirect within allowed destinations', async (t) => {
  const { port, seen } = await serve(t, (req, res) => {
    if (req.url === '/old') res.writeHead(302, { location: '/new' }).end()
    else hello(req, res)
  })
  const result = await httpTool({ allowHosts: ['127.0.0.1'] }).execute({ url: `http://127.0.0.1:${port}/old` }, context())
  assert.equal(result.success, true)
  assert.deepEqual(seen.map((s) => s.url), ['/old', '/new'])
})

test('http_request refuses a redirect from an allowed host to a private address that is not allowed', async (t) => {
  const target = await serve(t, hello, '127.0.0.2')
  const { port } = await serve(t, (_req, res) => res.writeHead(302, { location: `http://127.0.0.2:${target.port}/` }).end())
  const result = await httpTool({ allowHosts: ['127.0.0.1'] }).execute({ url: `http://127.0.0.1:${port}/` }, context())
  assert.deepEqual(result, {
    success: false,
    output: '',
    error: 'destination address is not allowed: 127.0.0.2 resolves to a private or loopback address'
  })
  assert.equal(target.seen.length, 0)
})

test('http_request refuses a redirect to a hostname that resolves to a loopback address', async (t) => {
  const target = await serve(t, hello)
  const { port } = await serve(t, (_req, res) => res.writeHead(302, { location: `http://localhost:${target.port}/` }).end(), '127.0.0.2')
  const result = await httpTool({ allowHosts: ['127.0.0.2'] }).execute({ url: `http://127.0.0.2:${port}/` }, context())
  assert.equal(result.error, 'destination address is not allowed: localhost resolves to a private or loopback address')
  assert.equal(target.seen.length, 0)
})

test('http_request turns a POST into a bodiless GET on a 303 redirect', async (t) => {
  const { port, seen } = await serve(t, (req, res) => {
    if (req.url === '/submit') res.writeHead(303, { location: '/done' }).end()
    else hello(req, res)
  })
  const result = await httpTool({ allowHosts: ['127.0.0.1'] }).execute({
    url: `http://127.0.0.1:${port}/submit`,
    method: 'POST',
    headers: { 'content-type': 'text/plain' },
    body: 'data'
  }, context())
  assert.equal(result.success, true)
  assert.equal(seen[1]?.method, 'GET')
  assert.equal(seen[1]?.headers['content-type'], undefined)
})

test('http_request drops credentials when a redirect leaves the origin', async (t) => {
  const target = await serve(t, hello, '127.0.0.2')
  const { port } = await serve(t, (_req, res) => res.writeHead(307, { location: `http://127.0.0.2:${target.port}/` }).end())
  const result = await httpTool({ allowHosts: ['127.0.0.0/8'] }).execute({
    url: `http://127.0.0.1:${port}/`,
    headers: { Authorization: 'Bearer secret', Cookie: 'session=1', 'x-keep': 'yes' }
  }, context())
  assert.equal(result.success, true)
  assert.equal(target.seen[0]?.headers.authorization, undefined)
  assert.equal(target.seen[0]?.headers.cookie, undefined)
  assert.equal(target.seen[0]?.headers['x-keep'], 'yes')
})

test('http_request keeps credentials on a same-origin redirect', async (t) => {
  const { port, seen } = await serve(t, (req, res) => {
    if (req.url === '/old') res.writeHead(301, { location: '/new' }).end()
    else hello(req, res)
  })
  await httpTool({ allowHosts: ['127.0.0.1'] }).execute({
    url: `http://127.0.0.1:${port}/old`,
    headers: { authorization: 'Bearer secret' }
  }, context())
  assert.equal(seen[1]?.headers.authorization, 'Bearer secret')
})

test('http_request stops after maxRedirects redirects', async (t) => {
  const { port, seen } = await serve(t, (req, res) => res.writeHead(302, { location: `${req.url ?? ''}x` }).end())
  const result = await httpTool({ allowHosts: ['127.0.0.1'], maxRedirects: 2 }).execute({ url: `http://127.0.0.1:${port}/` }, context())
  assert.deepEqual(result, { success: false, output: '', error: 'too many redirects (limit 2)' })
  assert.equal(seen.length, 3)
})

test('http_request truncates a response body larger than maxResponseBytes', async (t) => {
  const { port } = await serve(t, (_req, res) => {
    res.writeHead(200, { 'content-type': 'text/plain' })
    res.end('y'.repeat(100000))
  })
  const result = await httpTool({ allowHosts: ['127.0.0.1'], maxResponseBytes: 10 }).execute({ url: `http://127.0.0.1:${port}/` }, context())
  assert.equal(result.success, true)
  assert.equal(result.output, `HTTP 200 OK\ncontent-type: text/plain\n\n${'y'.repeat(10)}\n[response truncated after 10 bytes]`)
})

test('http_request stops reading a response that never ends once the bound is reached', async (t) => {
  const { port } = await serve(t, (_req, res) => {
    res.writeHead(200, { 'content-type': 'text/plain' })
    const timer = setInterval(() => res.write('z'.repeat(1024)), 5)
    res.on('close', () => clearInterval(timer))
  })
  const result = await httpTool({ allowHosts: ['127.0.0.1'], maxResponseBytes: 4096 }).execute({ url: `http://127.0.0.1:${port}/` }, context())
  assert.equal(result.success, true)
  assert.match(result.output, /\[response truncated after 4096 bytes\]$/)
})

test('http_request times out when the server does not answer', async (t) => {
  const { port } = await serve(t, () => {})
  const started = Date.now()
  const result = await httpTool({ allowHosts: ['127.0.0.1'] }).execute({ url: `http://127.0.0.1:${port}/`, timeout_ms: 200 }, context())
  assert.deepEqual(result, { success: false, output: '', error: 'request timed out after 200 ms' })
  assert.ok(Date.now() - started < 2000)
})

test('http_request stops when the call is aborted', async (t) => {
  const controller = new AbortController()
  // Aborted once the request has reached the server, which never answers it.
  const { port } = await serve(t, () => { controller.abort() })
  const result = await httpTool({ allowHosts: ['127.0.0.1'] }).execute({ url: `http://127.0.0.1:${port}/` }, context(controller.signal))
  assert.deepEqual(result, { success: false, output: '', error: 'cancelled' })
})

test('http_request refuses schemes other than http and https', async () => {
  const tool = httpTool({ allowPrivate: true })
  for (const url of ['file:///etc/passwd', 'ftp://example.com/x', 'gopher://127.0.0.1:70/']) {
    const result = await tool.execute({ url }, context())
    assert.deepEqual(result, { success: false, output: '', error: 'only http and https URLs are allowed' }, url)
  }
})

test('http_request refuses a redirect to a non-http scheme', async (t) => {
  const { port } = await serve(t, (_req, res) => res.writeHead(302, { location: 'file:///etc/passwd' }).end())
  const result = await httpTool({ allowHosts: ['127.0.0.1'] }).execute({ url: `http://127.0.0.1:${port}/` }, context())
  assert.equal(result.error, 'only http and https URLs are allowed')
})

test('http_request refuses obfuscated and IPv6 forms of loopback', async () => {
  const tool = httpTool()
  for (const url of ['http://2130706433/', 'http://0x7f.1/', 'http://[::1]/', 'http://[::ffff:127.0.0.1]/', 'http://[::ffff:7f00:1]/']) {
    const result = await tool.execute({ url }, context())
    assert.equal(result.success, false, url)
    assert.match(result.error ?? '', /^destination address is not allowed/, url)
  }
})

test('the destination guard lookup refuses a name with any private answer', async () => {
  const guard = createDestinationGuard({ allowHosts: [], allowPrivate: false })
  const err = await new Promise<NodeJS.ErrnoException | null>((resolve) => {
    guard.lookup('localhost', { all: true }, (e) => resolve(e))
  })
  assert.match(err?.message ?? '', /^destination address is not allowed: localhost/)
})

test('the destination guard matches an IPv4 allowlist entry against its IPv4-mapped IPv6 form', () => {
  const guard = createDestinationGuard({ allowHosts: ['127.0.0.1', '10.0.0.0/8'], allowPrivate: false })
  assert.equal(guard.permits('example.test', '::ffff:127.0.0.1'), true)
  assert.equal(guard.permits('example.test', '::ffff:10.9.8.7'), true)
  assert.equal(guard.permits('example.test', '192.168.0.1'), false)
})

const ADDRESSES: Array<[string, boolean]> = [
  ['127.0.0.1', true],
  ['127.255.255.254', true],
  ['10.1.2.3', true],
  ['172.16.0.1', true],
  ['172.31.255.255', true],
  ['172.32.0.1', false],
  ['192.168.1.1', true],
  ['169.254.169.254', true],
  ['100.64.0.1', true],
  ['100.128.0.1', false],
  ['0.0.0.0', true],
  ['224.0.0.1', true],
  ['240.0.0.1', true],
  ['255.255.255.255', true],
  ['8.8.8.8', false],
  ['1.1.1.1', false],
  ['::1', true],
  ['::', true],
  ['fc00::1', true],
  ['fd12:3456::1', true],
  ['fe80::1', true],
  ['fe80::1%eth0', true],
  ['ff02::1', true],
  ['::ffff:127.0.0.1', true],
  ['::ffff:7f00:1', true],
  ['::ffff:10.0.0.1', true],
  ['::ffff:8.8.8.8', false],
  ['64:ff9b::a9fe:a9fe', true],
  ['64:ff9b::808:808', false],
  ['2002:7f00:1::', true],
  ['2606:4700:4700::1111', false],
  ['2001:4860:4860::8888', false],
  ['not-an-ip', true]
]

test('isPrivateAddress recognises private, loopback and reserved addresses', () => {
  const wrong = ADDRESSES
    .map(([ip, expected]) => ({ ip, expected, actual: isPrivateAddress(ip) }))
    .filter(({ expected, actual }) => expected !== actual)
  assert.deepEqual(wrong, [])
})
