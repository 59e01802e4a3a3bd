/**
 * Spotting replies that tried to use the tool protocol and failed, so the loop can ask the model to
 * retry. False positives cost a wasted round and confuse the model, so ordinary prose, examples and
 * business JSON that merely names a tool must pass.
 */
import { isCallShaped, mapToolNameAlias } from './calls.js'
import { isPlainObject, tryParseJson } from './json.js'
import { analyseResponse, mayHoldToolProtocol, mentionsExample } from './parse.js'

const FRAME_MARKER = '<(?:tool_calls|tool_call|toolcall|tool-call|invoke)\\b|```[ \\t]*(?:tool_calls?|tool-call|toolcall|invoke|tool[ \\t]+([A-Za-z0-9_.:-]+))'
const TAG_CLOSE = /<\/(?:tool_calls|tool_call|toolcall|tool-call|invoke)\s*>/i
const FENCE_CLOSE = /^[ \t]*```(?![\w-])|<\/(?:tool_calls|tool_call|toolcall|tool-call|invoke)\s*>/im
/** How far after a marker its payload is looked for when nothing closes it. */
const PAYLOAD_WINDOW = 4096
/** Markers examined per reply; a real attempt shows itself in the first few. */
const MAX_MARKERS = 64
const CALL_KEY = /"(?:name|arguments|parameters|function)"\s*:/
const ARGUMENTS_KEY = /"(?:arguments|parameters)"\s*:/
const CONTAINER_KEY = /"(?:tool_calls|function_call)"\s*:/
const MAX_NAME_DEPTH = 4

function isKnownTool (name: string, known: ReadonlySet<string>): boolean {
  const trimmed = name.trim().toLowerCase()
  return trimmed !== '' && (known.has(trimmed) || known.has(mapToolNameAlias(trimmed).toLowerCase()))
}

function mentionsKnownWord (text: string, known: ReadonlySet<string>): boolean {
  return text.toLowerCase().split(/[^a-z0-9_-]+/).some((word) => isKnownTool(word, known))
}

/** Payload inside a tag or fence that parsed to no call, judged with the prose around the markers. */
function hasFailedFramedPayload (text: string, known: ReadonlySet<string>): boolean {
  const marker = new RegExp(FRAME_MARKER, 'gi')
  const prose: string[] = []
  let proseStart = 0
  let signalled = false
  for (let count = 0; count < MAX_MARKERS; count++) {
    const found = marker.exec(text)
    if (found === null) break
    prose.push(text.slice(proseStart, found.index))
    const payloadStart = found.index + found[0].length
    const window = text.slice(payloadStart, payloadStart + PAYLOAD_WINDOW)
    const close = (found[0].startsWith('`') ? FENCE_CLOSE : TAG_CLOSE).exec(window)
    const payload = close === null ? window : window.slice(0, close.index)
    const fenceName = found[1]
    // A closed frame is a deliberate payload, so naming a tool is enough; an open one in running
    // prose ("wrap calls in <tool_call> tags") needs JSON keys before it counts.
    if ((fenceName !== undefined && isKnownTool(fenceName, known)) || CALL_KEY.test(payload) ||
        (close !== null && mentionsKnownWord(payload, known))) {
      signalled = true
    }
    proseStart = payloadStart + (close === null ? payload.length : close.index + close[0].length)
    marker.lastIndex = proseStart
  }
  prose.push(text.slice(proseStart))
  return signalled && !mentionsExample(prose.join('\n'))
}

function namesInValue (value: unknown, depth: number): string[] {
  if (depth > MAX_NAME_DEPTH) return []
  if (Array.isArray(value)) return value.flatMap((item) => namesInValue(item, depth + 1))
  if (!isPlainObject(value)) return []
  const names = typeof value.name === 'string' ? [value.name] : []
  for (const key of ['function', 'function_call', 'tool_calls']) {
    if (value[key] !== undefined) names.push(...namesInValue(value[key], depth + 1))
  }
  return names
}

function isProtocolShaped (value: unknown): boolean {
  if (Array.isArray(value)) return value.some(isCallShaped)
  if (!isPlainObject(value)) return false
  if (Array.isArray(value.tool_calls) && value.tool_calls.some((item) => isPlainObject(item))) return true
  return isCallShaped(value.function_call) || isCallShaped(value)
}

/** An explicit tool envelope, as opposed to a bare `{name, arguments}` that could be business data. */
function hasExplicitEnvelope (value: unknown): boolean {
  if (Array.isArray(value)) return value.some((item) => isPlainObject(item) && isPlainObject(item.function))
  return isPlainObject(value) && (Array.isArray(value.tool_calls) || isPlainObject(value.function))
}

/** The body of a reply that is exactly one ```` ```json ```` (or bare) fence. */
function soleJsonFenceBody (text: string): string | null {
  if (!text.startsWith('```') || !text.endsWith('```') || text.length < 6) return null
  const firstNewline = text.indexOf('\n')
  if (firstNewline < 0) return null
  const language = text.slice(3, firstNewline).trim().toLowerCase()
  if (language !== '' && language !== 'json') return null
  const body = text.slice(firstNewline + 1, text.length - 3)
  return body.includes('```') ? null : body.trim()
}

/** A reply that is (fenced) JSON carrying a tool envelope that names an available tool. */
function isFailedJsonEnvelope (text: string, known: ReadonlySet<string>): boolean {
  const body = soleJsonFenceBody(text) ?? (text.startsWith('{') || text.startsWith('[') ? text : null)
  if (body === null) return false
  const parsed = tryParseJson(body)
  if (parsed.ok) {
    return isProtocolShaped(parsed.value) && namesInValue(parsed.value, 0).some((name) => isKnownTool(name, known))
  }
  if (!ARGUMENTS_KEY.test(body)) return false
  if (CONTAINER_KEY.test(body)) return true
  for (const match of body.matchAll(/"name"\s*:\s*"([^"\\]{1,128})"/g)) {
    if (isKnownTool(match[1] ?? '', known)) return true
  }
  return false
}

/**
 * True when `text` looks like an attempted tool-call protocol payload (tags, fences, or a JSON call
 * envelope naming one of `knownToolNames`, lower-cased) that the parser could not turn into a call
 * for an available tool.
 */
export function detectToolProtocolIssue (text: string, knownToolNames: ReadonlySet<string>): boolean {
  if (!mayHoldToolProtocol(text)) return false
  const analysis = analyseResponse(text)
  if (analysis.cleaned === '' || analysis.exampleWithheld) return false
  if (analysis.calls.length > 0) {
    if (analysis.calls.some((call) => isKnownTool(call.name, knownToolNames))) return false
    if (analysis.source === 'framed') return true
    const parsed = tryParseJson(analysis.cleaned)
    return parsed.ok && hasExplicitEnvelope(parsed.value)
  }
  return hasFailedFramedPayload(analysis.cleaned, knownToolNames) || isFailedJsonEnvelope(analysis.cleaned, knownToolNames)
}
