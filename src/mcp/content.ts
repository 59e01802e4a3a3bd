/**
 * MCP call results → Tollgate tool results. The model sees text only, so every content block
 * becomes a line of text (binary blocks are described, never inlined); `structuredContent`
 * travels as `data`. `isError` is the server saying the tool failed: success false.
 */
import type { ToolResult } from '../tools/contract.js'

interface ContentBlock {
  type?: unknown
  text?: unknown
  mimeType?: unknown
  data?: unknown
  uri?: unknown
  name?: unknown
  resource?: { uri?: unknown, mimeType?: unknown, text?: unknown, blob?: unknown }
}

export interface McpCallResult {
  content?: unknown
  structuredContent?: unknown
  isError?: unknown
  /** Protocol 2024-10-07 servers answer with a bare `toolResult`. */
  toolResult?: unknown
}

export const MCP_ERROR_FALLBACK = 'the MCP tool reported an error without a message'

function str (v: unknown): string {
  return typeof v === 'string' ? v : ''
}

/** Decoded size of base64 text, without decoding it. */
function base64Bytes (data: unknown): number {
  const s = str(data).replace(/\s/g, '')
  const padding = s.endsWith('==') ? 2 : s.endsWith('=') ? 1 : 0
  return Math.max(0, Math.floor(s.length * 3 / 4) - padding)
}

function blockText (block: ContentBlock): string {
  switch (block.type) {
    case 'text':
      return str(block.text)
    case 'image':
    case 'audio':
      return `[${block.type}: ${str(block.mimeType) || 'unknown type'}, ${base64Bytes(block.data)} bytes]`
    case 'resource_link':
      return `[resource link: ${str(block.name) || str(block.uri)} <${str(block.uri)}>]`
    case 'resource': {
      const r = block.resource ?? {}
      if (typeof r.text === 'string') return `[resource <${str(r.uri)}>]\n${r.text}`
      return `[resource <${str(r.uri)}>: ${str(r.mimeType) || 'binary'}, ${base64Bytes(r.blob)} bytes]`
    }
    default:
      return `[unsupported content block: ${typeof block.type === 'string' ? block.type : 'unknown'}]`
  }
}

/** Bounds text by UTF-16 units without splitting a surrogate pair. */
export function boundText (text: string, maxChars: number): string {
  if (text.length <= maxChars) return text
  let end = maxChars
  const code = text.charCodeAt(end - 1)
  if (code >= 0xd800 && code <= 0xdbff) end -= 1
  return `${text.slice(0, end)}\n[... MCP output truncated at ${maxChars} characters]`
}

export function convertCallResult (result: McpCallResult, maxChars: number): ToolResult {
  const blocks = Array.isArray(result.content) ? result.content as ContentBlock[] : []
  let text = blocks.map((b) => blockText(typeof b === 'object' && b !== null ? b : {})).filter((t) => t !== '').join('\n')
  const structured = result.structuredContent ?? (result.content === undefined ? result.toolResult : undefined)
  if (text === '' && structured !== undefined) text = JSON.stringify(structured, null, 2) ?? ''
  text = boundText(text, maxChars)
  if (result.isError === true) return { success: false, output: '', error: text === '' ? MCP_ERROR_FALLBACK : text }
  return structured === undefined
    ? {
        success: true, output: text, error: null
      }
    : { success: true, output: text, error: null, data: structured }
}
