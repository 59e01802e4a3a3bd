/**
 * One configured MCP server: connect, list tools, wrap them, call them with a bounded timeout
 * and the turn's cancellation, and reconnect with exponential backoff whenever the connection
 * fails (a child that exits, an HTTP endpoint that stops answering, a failed start). Nothing here
 * ever throws into the gateway: a server that is down just has no tools, or failing calls.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPError } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import { ErrorCode, McpError } from '@modelcontextprotocol/sdk/types.js'
import type { Logger } from 'pino'
import type { McpServerConfig } from '../../schemas/config.js'
import { canonicalJson } from '../core/json/canonical.js'
import { scrubText } from '../core/security/redact.js'
import type { Tool, ToolContext, ToolResult } from '../tools/contract.js'
import { convertCallResult } from './content.js'
import { createTransport } from './transport.js'
import { wrapMcpTool, type McpToolDefinition } from './wrap.js'

export interface ConnectionOptions {
  connectTimeoutMs: number
  callTimeoutMs: number
  maxOutputChars: number
  maxTools: number
  reconnectInitialMs: number
  reconnectMaxMs: number
  env: NodeJS.ProcessEnv
  log: Logger
}

export type ConnectionState = 'connecting' | 'ready' | 'reconnecting' | 'closed'

export interface McpServerStatus {
  name: string
  transport: McpServerConfig['transport']
  state: ConnectionState
  tools: number
  /** Successful connections so far: above 1 means it reconnected. */
  connects: number
  last_error?: string
}

const CLIENT_INFO = { name: 'tollgate', version: '0.1.0' }
const MAX_LIST_PAGES = 64
const STDERR_TAIL_CHARS = 2048
const STDERR_LINE_CHARS = 1000

function message (err: unknown): string {
  return err instanceof Error ? err.message : String(err)
}

/**
 * Failures of the connection itself, as opposed to a server answering a request with an error
 * (bad params, a tool-side exception, a timeout): only these warrant a reconnect.
 */
function isConnectionFailure (err: unknown): boolean {
  if (err instanceof McpError) return err.code === ErrorCode.ConnectionClosed
  return true
}

/**
 * A Streamable HTTP server answers 404 to a session it no longer knows (it restarted): the
 * request was never processed, and the protocol says to start a new session.
 */
function isSessionGone (err: unknown): boolean {
  return err instanceof StreamableHTTPError && err.code === 404
}

export class McpServerConnection {
  private client: Client | null = null
  private state: ConnectionState = 'connecting'
  private wrappers: readonly Tool[] = []
  private listing = ''
  private attempt = 0
  private connects = 0
  private timer: NodeJS.Timeout | null = null
  private lastError: string | null = null
  private stderrTail = ''
  /** An immediate reconnect that concurrent calls hitting a lost session wait for together. */
  private renewal: Promise<void> | null = null
  private readonly log: Logger

  constructor (readonly name: string, private readonly server: McpServerConfig, private readonly options: ConnectionOptions) {
    this.log = options.log.child({ mcp_server: name })
  }

  /** The first attempt; resolves (never rejects) once it succeeded or a retry is scheduled. */
  async start (): Promise<void> {
    await this.connect()
  }

  tools (): readonly Tool[] {
    return this.wrappers
  }

  status (): McpServerStatus {
    const status: McpServerStatus = {
      name: this.name, transport: this.server.transport, state: this.state, tools: this.wrappers.length,
      connects: this.connects
    }
    if (this.state !== 'ready' && this.lastError !== null) status.last_error = this.lastError
    return status
  }

  private async connect (): Promise<void> {
    if (this.state === 'closed') return
    this.state = this.attempt === 0 ? 'connecting' : 'reconnecting'
    this.stderrTail = ''
    const client = new Client(CLIENT_INFO, {
      capabilities: {},
      listChanged: { tools: { autoRefresh: false, onChanged: () => { void this.refreshTools(client) } } }
    })
    client.onclose = () => { this.onClosed(client) }
    client.onerror = (err) => { this.log.debug({ err: message(err) }, 'MCP transport error') }
    this.client = client
    try {
      const { transport, stderr, missingEnv } = createTransport(this.server, this.options.env)
      if (missingEnv.length > 0 && this.attempt === 0) this.log.warn({ missing: missingEnv }, 'MCP server config names gateway environment variables that are not set')
      stderr?.on('data', (chunk: Buffer) => { this.onStderr(chunk.toString('utf8')) })
      await client.connect(transport, { timeout: this.options.connectTimeoutMs })
      const defs = await this.listTools(client)
      if (this.client !== client) return
      this.applyListing(defs)
      this.state = 'ready'
      this.connects += 1
      this.attempt = 0
      this.lastError = null
      this.log.info({ tools: this.wrappers.length }, 'MCP server connected')
    } catch (err) {
      if (this.client !== client) return
      this.client = null
      this.lastError = message(err)
      this.log.warn({ err: this.lastError, attempt: this.attempt + 1, stderr: this.stderrTail === '' ? undefined : this.stderrTail }, 'MCP server is unavailable; retrying with backoff')
      await client.close().catch(() => {})
      this.scheduleReconnect()
    }
  }

  private onStderr (text: string): void {
    const scrubbed = scrubText(text)
    this.stderrTail = (this.stderrTail + scrubbed).slice(-STDERR_TAIL_CHARS)
    for (const line of scrubbed.split('\n')) {
      if (line.trim() !== '') this.log.debug({ stderr: line.slice(0, STDERR_LINE_CHARS) }, 'MCP server stderr')
    }
  }

  private async listTools (client: Client): Promise<McpToolDefinition[]> {
    const defs: McpToolDefinition[] = []
    let cursor: string | undefined
    for (let page = 0; page < MAX_LIST_PAGES; page++) {
      const result = await client.listTools(cursor === undefined ? {} : { cursor }, { timeout: this.options.connectTimeoutMs })
      defs.push(...result.tools)
      cursor = result.nextCursor
      if (cursor === undefined || defs.length >= this.options.maxTools) break
    }
    if (defs.length > this.options.maxTools) {
      this.log.warn({ listed: defs.length, kept: this.options.maxTools }, 'MCP server lists more tools than mcp.max_tools_per_server; the rest are ignored')
    }
    return defs.slice(0, this.options.maxTools)
  }

  /**
   * Wrappers are rebuilt only when the listing changed: each build compiles the schemas, and a
   * flapping server must not grow the validator cache on every reconnect.
   */
  private applyListing (defs: readonly McpToolDefinition[]): void {
    const listing = canonicalJson(defs.map((d) => ({
      name: d.name,
      description: d.description ?? null,
      title: d.title ?? null,
      inputSchema: d.inputSchema ?? null,
      readOnly: d.annotations?.readOnlyHint === true
    })))
    if (listing === this.listing) return
    this.listing = listing
    const seen = new Set<string>()
    const wrappers: Tool[] = []
    for (const def of defs) {
      const wrapped = wrapMcpTool(this.name, def, async (tool, args, ctx) => await this.call(tool, args, ctx))
      if ('skip' in wrapped) {
        this.log.warn({ tool: def.name, reason: wrapped.skip }, 'MCP tool not offered')
      } else if (seen.has(wrapped.name)) {
        this.log.warn({ tool: def.name, name: wrapped.name }, 'MCP tool not offered: its name collides with another tool of this server')
      } else {
        seen.add(wrapped.name)
        wrappers.push(wrapped)
      }
    }
    this.wrappers = Object.freeze(wrappers)
  }

  private async refreshTools (client: Client): Promise<void> {
    if (this.client !== client || this.state !== 'ready') return
    try {
      const defs = await this.listTools(client)
      if (this.client === client) this.applyListing(defs)
    } catch (err) {
      this.log.warn({ err: message(err) }, 'could not refresh the MCP tool list after a change notification')
    }
  }

  private onClosed (client: Client): void {
    if (this.client !== client || this.state === 'closed') return
    this.client = null
    this.lastError = 'connection closed'
    this.log.warn({ stderr: this.stderrTail === '' ? undefined : this.stderrTail }, 'MCP server connection closed; reconnecting with backoff')
    this.scheduleReconnect()
  }

  private markBroken (client: Client, err: unknown): void {
    if (this.client !== client || this.state === 'closed') return
    this.client = null
    this.lastError = message(err)
    this.log.warn({ err: this.lastError }, 'MCP server connection failed; reconnecting with backoff')
    void client.close().catch(() => {})
    this.scheduleReconnect()
  }

  private scheduleReconnect (): void {
    if (this.state === 'closed' || this.timer !== null) return
    this.state = 'reconnecting'
    const delay = Math.min(this.options.reconnectInitialMs * 2 ** Math.min(this.attempt, 20), this.options.reconnectMaxMs)
    this.attempt += 1
    this.timer = setTimeout(() => {
      this.timer = null
      void this.connect()
    }, delay)
    this.timer.unref()
  }

  private async renewSession (client: Client): Promise<void> {
    if (this.client === client) {
      this.client = null
      this.log.info('MCP server lost the session; starting a new one')
      void client.close().catch(() => {})
      this.renewal = this.connect().finally(() => { this.renewal = null })
    }
    await this.renewal
  }

  async call (tool: string, args: Record<string, unknown>, ctx: ToolContext, retry = true): Promise<ToolResult> {
    const client = this.client
    if (client === null || this.state !== 'ready') {
      throw new Error(`MCP server "${this.name}" is not connected${this.lastError === null ? '' : ` (${this.lastError})`}`)
    }
    const timeout = this.server.timeout_ms ?? this.options.callTimeoutMs
    try {
      const result = await client.callTool(
        { name: tool, arguments: args }, undefined, { signal: ctx.signal, timeout, maxTotalTimeout: timeout }
      )
      return convertCallResult(result, this.options.maxOutputChars)
    } catch (err) {
      if (ctx.signal.aborted) throw err
      if (err instanceof McpError && err.code === ErrorCode.RequestTimeout) {
        throw new Error(`MCP server "${this.name}" did not answer within ${timeout} ms`)
      }
      if (retry && isSessionGone(err)) {
        await this.renewSession(client)
        return await this.call(tool, args, ctx, false)
      }
      if (isConnectionFailure(err)) this.markBroken(client, err)
      throw err
    }
  }

  async close (): Promise<void> {
    this.state = 'closed'
    if (this.timer !== null) clearTimeout(this.timer)
    this.timer = null
    const client = this.client
    this.client = null
    await client?.close().catch(() => {})
  }
}
