/**
 * Incremental Server-Sent Events parser (WHATWG event-stream rules) for provider streams:
 * fed arbitrary chunks, yields complete events; tolerant of CRLF, comments and split lines.
 */
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

  constructor (options: { maxLineBytes?: number } = {}) {
    this.maxLineBytes = options.maxLineBytes ?? 4 * 1024 * 1024
  }

  feed (chunk: string): SseMessage[] {
    this.buffer += chunk
    const out: SseMessage[] = []
    let start = 0
    for (;;) {
      const nl = this.indexOfLineEnd(start)
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
