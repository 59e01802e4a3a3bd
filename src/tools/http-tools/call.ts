/**
 * One HTTP tool call: the call POSTed to the declared URL, signed as a Standard Webhook, through
 * the SSRF guard, bounded in time and size, retried (same webhook-id) only when the declaration
 * says the endpoint is idempotent.
 */
import net from 'node:net'
import { Agent, request } from 'undici'
import { fail, ok, type ToolProgress, type ToolResult } from '../contract.js'
import { signWebhook } from '../../core/security/webhook-signature.js'
import { DestinationNotAllowedError, type DestinationGuard } from '../builtin/net-guard.js'

export interface HttpCallOptions {
  tool: string
  url: URL
  secret: string
  timeoutMs: number
  /** 1 unless the endpoint is idempotent. */
  maxAttempts: number
  maxResponseBytes: number
  guard: DestinationGuard
}

export interface HttpCall {
  /** The webhook-id: the same on every attempt, so the endpoint can drop a repeat. */
  messageId: string
  body: string
  signal: AbortSignal
  /** Where a `plan` in the endpoint's answer goes (the call's progress): checked and bounded there. */
  progress?: (update: ToolProgress) => void
}

/** Statuses that say "try again later"; every other answer is final. */
const RETRYABLE_STATUSES = new Set([408, 425, 429, 500, 502, 503, 504])
const BACKOFF_MS = 250
const MAX_BACKOFF_MS = 4_000
const SNIPPET_CHARS = 512

type Attempt = { result: ToolResult, retryable: boolean, plan?: unknown }

class TooLarge extends Error {}

async function readBounded (body: AsyncIterable<unknown>, maxBytes: number): Promise<string> {
  const chunks: Buffer[] = []
  let size = 0
  for await (const chunk of body) {
    const buf = chunk as Buffer
    size += buf.length
    // Leaving the loop destroys the body: the rest of an oversized answer is never read.
    if (size > maxBytes) throw new TooLarge()
    chunks.push(buf)
  }
  return Buffer.concat(chunks).toString('utf8')
}

/** The endpoint's `{ output, data?, is_error?, plan? }` as the call's result, and the plan it reports, if any. */
function resultOf (tool: string, text: string): { result: ToolResult, plan?: unknown } {
  let parsed: unknown
  try {
    parsed = JSON.parse(text)
  } catch {
    return { result: fail(`the ${tool} endpoint answered something other than JSON`) }
  }
  if (typeof parsed !== 'object' || parsed === null || typeof (parsed as { output?: unknown }).output !== 'string') {
    return { result: fail(`the ${tool} endpoint's answer has no "output" string`) }
  }
  const { output, data, is_error: isError, plan } = parsed as { output: string, data?: unknown, is_error?: unknown, plan?: unknown }
  const reported = plan === undefined ? {} : { plan }
  if (isError === true) return { result: { success: false, output, error: output, ...(data === undefined ? {} : { data }) }, ...reported }
  return { result: ok(output, data), ...reported }
}

function refusal (err: unknown): DestinationNotAllowedError | null {
  for (let e: unknown = err; e instanceof Error; e = e.cause) {
    if (e instanceof DestinationNotAllowedError) return e
  }
  return null
}

async function attempt (options: HttpCallOptions, call: HttpCall, agent: Agent): Promise<Attempt> {
  const deadline = AbortSignal.timeout(options.timeoutMs)
  const signal = AbortSignal.any([call.signal, deadline])
  // Signed per attempt: the timestamp is fresh, so a retry is not refused as a replay.
  const signature = signWebhook({ id: call.messageId, timestampSeconds: Date.now() / 1000, body: call.body, secret: options.secret })
  try {
    const res = await request(options.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'user-agent': 'tollgate-http-tool', ...signature },
      body: call.body,
      dispatcher: agent,
      signal
    })
    let text: string
    try {
      text = await readBounded(res.body, options.maxResponseBytes)
    } catch (err) {
      if (err instanceof TooLarge) return { result: fail(`the ${options.tool} endpoint's answer is longer than ${options.maxResponseBytes} bytes`), retryable: false }
      throw err
    }
    if (res.statusCode >= 200 && res.statusCode < 300) return { ...resultOf(options.tool, text), retryable: false }
    const snippet = text.slice(0, SNIPPET_CHARS)
    return { result: fail(`the ${options.tool} endpoint answered HTTP ${res.statusCode}`, snippet), retryable: RETRYABLE_STATUSES.has(res.statusCode) }
  } catch (err) {
    const refused = refusal(err)
    if (refused !== null) return { result: fail(refused.message), retryable: false }
    if (call.signal.aborted) return { result: fail('cancelled'), retryable: false }
    if (deadline.aborted) return { result: fail(`the ${options.tool} endpoint did not answer within ${options.timeoutMs} ms`), retryable: true }
    return { result: fail(`the ${options.tool} endpoint could not be reached: ${err instanceof Error ? err.message : String(err)}`), retryable: true }
  }
}

function pause (ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, ms)
    signal.addEventListener('abort', () => { clearTimeout(timer); resolve() }, { once: true })
  })
}

export async function callHttpTool (options: HttpCallOptions, call: HttpCall): Promise<ToolResult> {
  const host = options.url.hostname.replace(/^\[|\]$/g, '')
  // Names are checked in the socket's lookup; a literal IP never reaches one.
  if (net.isIP(host) !== 0 && !options.guard.permits(host, host)) return fail(new DestinationNotAllowedError(host).message)
  const agent = new Agent({ connect: { lookup: options.guard.lookup, timeout: options.timeoutMs } })
  try {
    let last: Attempt = await attempt(options, call, agent)
    for (let n = 1; n < options.maxAttempts && last.retryable && !call.signal.aborted; n++) {
      await pause(Math.min(BACKOFF_MS * 2 ** (n - 1), MAX_BACKOFF_MS), call.signal)
      if (call.signal.aborted) break
      last = await attempt(options, call, agent)
    }
    // Reported before the result: progress is ignored once the call has settled.
    if (last.plan !== undefined) call.progress?.({ plan: last.plan as ToolProgress['plan'] })
    return last.result
  } finally {
    await agent.destroy()
  }
}
