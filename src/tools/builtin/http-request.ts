/**
 * The `http_request` tool: one HTTP(S) request with SSRF protection, manual redirect handling and a
 * bounded response body.
 */
import { STATUS_CODES } from 'node:http'
import net from 'node:net'
import { Agent, request, type Dispatcher } from 'undici'
import { defineTool, fail, ok, type Tool, type ToolResult } from '../contract.js'
import { createDestinationGuard, DestinationNotAllowedError, type DestinationGuard } from './net-guard.js'
import { appendNotice } from './text.js'

export interface HttpOptions {
  allowHosts: string[]
  allowPrivate: boolean
  timeoutMs: number
  maxResponseBytes: number
  maxRedirects: number
}

const METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'HEAD'] as const
type Method = typeof METHODS[number]
const SAFE_METHODS: ReadonlySet<string> = new Set(['GET', 'HEAD'])

interface HttpArgs {
  url: string
  method?: Method
  headers?: Record<string, string>
  body?: string
  timeout_ms?: number
}

interface Hop {
  url: URL
  method: Method
  headers: Record<string, string>
  body: string | undefined
}

const REDIRECT_STATUSES = new Set([301, 302, 303, 307, 308])
const CREDENTIAL_HEADERS = new Set(['authorization', 'cookie', 'proxy-authorization'])
const BODY_HEADERS = new Set(['content-type', 'content-length', 'content-encoding', 'transfer-encoding'])
// Bytes of a redirect's body read before its connection is dropped rather than reused.
const REDIRECT_BODY_LIMIT = 65536
const TIMEOUT_CODES = new Set(['UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_BODY_TIMEOUT', 'UND_ERR_CONNECT_TIMEOUT'])

function withoutHeaders (headers: Record<string, string>, names: ReadonlySet<string>): Record<string, string> {
  return Object.fromEntries(Object.entries(headers).filter(([name]) => !names.has(name.toLowerCase())))
}

function firstHeader (value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value
}

/** Refuses a URL before any connection: wrong scheme, or a literal IP that is not allowed. */
function refuseUrl (url: URL, guard: DestinationGuard): ToolResult | null {
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return fail('only http and https URLs are allowed')
  const host = url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname
  // Names are checked in the socket's lookup; literal IPs never reach a lookup, so check them here.
  if (net.isIP(host) !== 0 && !guard.permits(host, host)) return fail(new DestinationNotAllowedError(host).message)
  return null
}

/** The request for the next hop, as browsers do it: 303 (and 301/302 after POST) become a bodiless GET. */
function nextHop (hop: Hop, status: number, location: URL): Hop {
  let { method, headers, body } = hop
  if (location.origin !== hop.url.origin) headers = withoutHeaders(headers, CREDENTIAL_HEADERS)
  if ((status === 303 && method !== 'HEAD') || ((status === 301 || status === 302) && method === 'POST')) {
    method = 'GET'
    body = undefined
    headers = withoutHeaders(headers, BODY_HEADERS)
  }
  return { url: location, method, headers, body }
}

async function renderResponse (res: Dispatcher.ResponseData, maxBytes: number): Promise<ToolResult> {
  const chunks: Buffer[] = []
  let size = 0
  let truncated = false
  for await (const chunk of res.body) {
    const buf = chunk as Buffer
    const room = maxBytes - size
    if (buf.length > room) {
      chunks.push(buf.subarray(0, room))
      truncated = true
      // Leaving the loop destroys the body, so the rest of the transfer is never read.
      break
    }
    chunks.push(buf)
    size += buf.length
  }

  let text = Buffer.concat(chunks).toString('utf8')
  if (truncated) text = appendNotice(text, `[response truncated after ${maxBytes} bytes]`)
  const status = res.statusCode
  const contentType = firstHeader(res.headers['content-type']) ?? ''
  const output = `HTTP ${status} ${STATUS_CODES[status] ?? ''}\ncontent-type: ${contentType}\n\n${text}`
  return status < 400 ? ok(output) : fail(`HTTP ${status}`, output)
}

function errorCode (err: unknown): string | undefined {
  return typeof err === 'object' && err !== null && 'code' in err && typeof err.code === 'string' ? err.code : undefined
}

function findRefusal (err: unknown): DestinationNotAllowedError | null {
  for (let e: unknown = err; e instanceof Error; e = e.cause) {
    if (e instanceof DestinationNotAllowedError) return e
  }
  return null
}

function requestFailure (err: unknown, cancel: AbortSignal, deadline: AbortSignal, timeoutMs: number): ToolResult {
  const refusal = findRefusal(err)
  if (refusal !== null) return fail(refusal.message)
  if (cancel.aborted) return fail('cancelled')
  const code = errorCode(err)
  if (deadline.aborted || (code !== undefined && TIMEOUT_CODES.has(code))) return fail(`request timed out after ${timeoutMs} ms`)
  if (code !== undefined && err instanceof Error) return fail(`request failed: ${err.message}`)
  throw err
}

async function perform (opts: HttpOptions, guard: DestinationGuard, args: HttpArgs, cancel: AbortSignal): Promise<ToolResult> {
  let url: URL
  try {
    url = new URL(args.url)
  } catch {
    return fail('invalid URL')
  }
  const timeoutMs = Math.min(args.timeout_ms ?? opts.timeoutMs, opts.timeoutMs)
  // headersTimeout and bodyTimeout are per phase; this bounds the whole call, redirects included.
  const deadline = AbortSignal.timeout(timeoutMs)
  const signal = AbortSignal.any([cancel, deadline])
  const agent = new Agent({
    connect: { lookup: guard.lookup, timeout: timeoutMs },
    headersTimeout: timeoutMs,
    bodyTimeout: timeoutMs
  })
  let hop: Hop = { url, method: args.method ?? 'GET', headers: { ...args.headers }, body: args.body }
  try {
    for (let redirects = 0; ; redirects++) {
      const refused = refuseUrl(hop.url, guard)
      if (refused !== null) return refused
      const res = await request(hop.url, { method: hop.method, headers: hop.headers, body: hop.body, dispatcher: agent, signal })
      const location = firstHeader(res.headers.location)
      if (!REDIRECT_STATUSES.has(res.statusCode) || location === undefined) return await renderResponse(res, opts.maxResponseBytes)
      // dump() discards a bounded amount and handles the stream's errors; destroy() would leave one unhandled.
      await res.body.dump({ limit: REDIRECT_BODY_LIMIT, signal })
      if (redirects >= opts.maxRedirects) return fail(`too many redirects (limit ${opts.maxRedirects})`)
      let next: URL
      try {
        next = new URL(location, hop.url)
      } catch {
        return fail('invalid redirect location')
      }
      hop = nextHop(hop, res.statusCode, next)
    }
  } catch (err) {
    return requestFailure(err, cancel, deadline, timeoutMs)
  } finally {
    await agent.destroy()
  }
}

export function createHttpRequestTool (opts: HttpOptions): Tool {
  const guard = createDestinationGuard({ allowHosts: opts.allowHosts, allowPrivate: opts.allowPrivate })
  return defineTool<HttpArgs>({
    name: 'http_request',
    description: 'Make an HTTP or HTTPS request and return the status, content type and (bounded) body. ' +
      'Private, loopback and link-local destinations are refused unless allowed by configuration.',
    parameters: {
      type: 'object',
      properties: {
        url: { type: 'string', format: 'uri', description: 'Absolute http:// or https:// URL.' },
        method: { type: 'string', enum: [...METHODS], description: 'HTTP method (default GET).' },
        headers: { type: 'object', additionalProperties: { type: 'string' }, description: 'Request headers.' },
        body: { type: 'string', description: 'Request body.' },
        timeout_ms: { type: 'integer', minimum: 1, description: `Timeout in milliseconds (at most ${opts.timeoutMs}).` }
      },
      required: ['url'],
      additionalProperties: false
    },
    // GET and HEAD are the methods HTTP defines as safe; a redirect never turns them into another.
    effects: (args) => SAFE_METHODS.has(args.method ?? 'GET') ? 'read' : 'write',
    async execute (args, ctx) {
      if (ctx.signal.aborted) return fail('cancelled')
      return await perform(opts, guard, args, ctx.signal)
    }
  })
}
