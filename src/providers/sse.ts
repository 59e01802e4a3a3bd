/**
 * Incremental Server-Sent Events parser (WHATWG event-stream rules) for provider streams:
 * fed arbitrary chunks, yields complete events; tolerant of CRLF, comments and split lines.
 * Bytes are decoded here as UTF-8, a character split across chunks waiting for its end, and a
 * leading byte-order mark dropped (as the event-stream rules say).
 */
import { StringDecoder } from 'node:string_decoder'

export interface SseMessage {
  event: string
  data: string
  id?: string
}

export class SseParser {
  private buffer = ''
  private data: string[] = []
  private event = ''
  private id: string | undefined
  private readonly maxLineBytes: number
  private readonly decoder = new StringDecoder('utf8')
  private started = false

  constructor (options: { maxLineBytes?: number } = {}) {
    this.maxLineBytes = options.maxLineBytes ?? 4 * 1024 * 1024
  }

  /** The next bytes of the stream (or text already decoded); answers the events they complete. */
  feed (chunk: Uint8Array | string): SseMessage[] {
    let text = typeof chunk === 'string' ? chunk : this.decoder.write(chunk)
    if (!this.started && text !== '') {
      this.started = true
      if (text.charCodeAt(0) === 0xfeff) text = text.slice(1)
    }
    this.buffer += text
    const out: SseMessage[] = []
    // Streams end their lines with LF: while the text holds no CR, each line ends at the next LF
    // (found by indexOf rather than a look at every character).
    const lfOnly = !this.buffer.includes('\r')
    let start = 0
    for (;;) {
      const nl = lfOnly ? this.buffer.indexOf('\n', start) : this.indexOfLineEnd(start)
      if (nl === -1) break
      const line = this.buffer.slice(start, nl)
      start = nl + (this.buffer[nl] === '\r' && this.buffer[nl + 1] === '\n' ? 2 : 1)
      const message = this.line(line)
      if (message !== null) out.push(message)
    }
    this.buffer = this.buffer.slice(start)
    if (this.buffer.length > this.maxLineBytes) throw new Error('event-stream line exceeds the size limit')
    return out
  }

  /** Flushes a final event not followed by a blank line (some servers end streams that way). */
  end (): SseMessage[] {
    const rest = this.decoder.end()
    if (rest !== '') this.buffer += rest
    const out: SseMessage[] = []
    if (this.buffer !== '') {
      const message = this.line(this.buffer)
      if (message !== null) out.push(message)
      this.buffer = ''
    }
    const message = this.line('')
    if (message !== null) out.push(message)
    return out
  }

  private indexOfLineEnd (from: number): number {
    for (let i = from; i < this.buffer.length; i++) {
      const c = this.buffer[i]
      if (c === '\n') return i
      // A lone CR at the very end may be the first half of CRLF: wait for more input.
      if (c === '\r') return i + 1 < this.buffer.length ? i : -1
    }
    return -1
  }

  private line (line: string): SseMessage | null {
    if (line === '') {
      if (this.data.length === 0) {
        this.event = ''
        return null
      }
      const message: SseMessage = { event: this.event === '' ? 'message' : this.event, data: this.data.join('\n') }
      if (this.id !== undefined) message.id = this.id
      this.data = []
      this.event = ''
      return message
    }
    if (line.startsWith(':')) return null
    const colon = line.indexOf(':')
    const field = colon === -1 ? line : line.slice(0, colon)
    let value = colon === -1 ? '' : line.slice(colon + 1)
    if (value.startsWith(' ')) value = value.slice(1)
    if (field === 'data') this.data.push(value)
    else if (field === 'event') this.event = value
    else if (field === 'id' && !value.includes('\0')) this.id = value
    return null
  }
}
