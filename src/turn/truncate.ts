/**
 * Tool-result truncation for history (`max_tool_result_bytes`). Limits are UTF-8 bytes, matching
 * the reference runtime, and the head/tail split keeps both the start of an output (usually the
 * answer) and its end (usually the error or summary).
 */

const IMAGE_MARKER_OPEN = Buffer.from('[IMAGE:', 'utf8')
const IMAGE_MARKER_CLOSE = 0x5d // ']'

export interface TruncatedText {
  text: string
  truncated: boolean
}

/** Writes the line that stands for the dropped middle. */
export type TruncationMarker = (droppedBytes: number, totalBytes: number) => string

/** The reference runtime's model-visible marker: it says "characters" but counts bytes (its contract). */
export const REFERENCE_MARKER: TruncationMarker = (dropped) => `[... ${dropped} characters truncated ...]`

/** What clients are shown: what was dropped and out of how much, in the unit really counted. */
export const CLIENT_MARKER: TruncationMarker = (dropped, total) => `[... ${dropped} of ${total} bytes truncated ...]`

export function truncateToolResult (text: string, limit: number, marker: TruncationMarker = REFERENCE_MARKER): TruncatedText {
  const max = Math.floor(limit)
  const bytes = Buffer.from(text, 'utf8')
  if (!(max > 0) || bytes.length <= max) return { text, truncated: false }

  const headLength = Math.floor(max * 2 / 3)
  const tailLength = max - headLength
  // Rounding and marker nudges only move the head end earlier and the tail start later, so the
  // two never overlap while the text is longer than the limit. `[IMAGE:` and `]` are ASCII, so
  // nudged boundaries stay on character boundaries.
  const headEnd = nudgeOutOfMarker(bytes, floorCharBoundary(bytes, headLength), 'head')
  const tailStart = nudgeOutOfMarker(bytes, ceilCharBoundary(bytes, bytes.length - tailLength), 'tail')

  const head = bytes.subarray(0, headEnd).toString('utf8')
  const tail = bytes.subarray(tailStart).toString('utf8')
  return { text: `${head}\n\n${marker(tailStart - headEnd, bytes.length)}\n\n${tail}`, truncated: true }
}

function isContinuationByte (byte: number | undefined): boolean {
  return byte !== undefined && (byte & 0xc0) === 0x80
}

function floorCharBoundary (bytes: Buffer, index: number): number {
  let position = Math.min(index, bytes.length)
  while (position > 0 && isContinuationByte(bytes[position])) position--
  return position
}

function ceilCharBoundary (bytes: Buffer, index: number): number {
  let position = Math.max(index, 0)
  while (position < bytes.length && isContinuationByte(bytes[position])) position++
  return position
}

/**
 * A half-kept `[IMAGE:...]` marker would reach the multimodal pipeline as a broken path, so a
 * boundary inside one moves out of it: the head ends before the marker, the tail starts after it.
 */
function nudgeOutOfMarker (bytes: Buffer, boundary: number, side: 'head' | 'tail'): number {
  if (boundary <= 0 || boundary >= bytes.length) return boundary
  let open = -1
  let found = bytes.indexOf(IMAGE_MARKER_OPEN)
  while (found !== -1 && found < boundary) {
    open = found
    found = bytes.indexOf(IMAGE_MARKER_OPEN, found + IMAGE_MARKER_OPEN.length)
  }
  if (open === -1) return boundary
  const close = bytes.indexOf(IMAGE_MARKER_CLOSE, open)
  if (close === -1 || close < boundary) return boundary
  return side === 'head' ? open : close + 1
}
