/**
 * Output lines of a running command as progress updates. A command that ends within `afterMs`
 * reports nothing (its result follows at once); one that runs longer reports the latest line seen
 * so far when `afterMs` has passed, then every line as it completes. Lines end at LF, CR or CRLF
 * (progress bars redraw with CR); stdout and stderr are split separately. Rate limits, scrubbing
 * and byte bounds are the dispatcher's (src/turn/progress.ts); this bounds the partial line and
 * hides the body of a private key, which the scrubber cannot recognise one line at a time.
 */
import { StringDecoder } from 'node:string_decoder'
import { privateKeyLineGuard } from '../../core/security/line-scrub.js'
import type { ToolProgress } from '../contract.js'

/** A longer line without a line end is reported cut here; the rest of it is skipped. */
export const MAX_PARTIAL_LINE_CHARS = 8192

export interface LineProgress {
  stdout: (chunk: Buffer) => void
  stderr: (chunk: Buffer) => void
  close: () => void
}

export function lineProgress (report: (update: ToolProgress) => void, afterMs: number): LineProgress {
  let live = afterMs === 0
  let latest: string | null = null
  let closed = false
  const timer = live
    ? null
    : setTimeout(() => {
      live = true
      if (latest !== null && !closed) report({ message: latest })
      latest = null
    }, afterMs)
  timer?.unref()

  const line = (text: string): void => {
    if (closed || text.trim() === '') return
    if (live) report({ message: text })
    else latest = text
  }

  const splitter = (): ((chunk: Buffer) => void) => {
    const decoder = new StringDecoder('utf8')
    // Split into lines, a PEM key's body no longer follows its BEGIN line in one text: hidden here.
    const guard = privateKeyLineGuard()
    const take = (text: string): void => {
      const shown = guard(text)
      if (shown !== null) line(shown)
    }
    let partial = ''
    let skipping = false
    return (chunk) => {
      const parts = (partial + decoder.write(chunk)).split(/\r\n|\r|\n/)
      partial = parts.pop() ?? ''
      for (const part of parts) {
        if (!skipping) take(part)
        skipping = false
      }
      if (partial.length > MAX_PARTIAL_LINE_CHARS) {
        if (!skipping) take(partial.slice(0, MAX_PARTIAL_LINE_CHARS))
        skipping = true
        partial = ''
      }
    }
  }

  return {
    stdout: splitter(),
    stderr: splitter(),
    close () {
      closed = true
      if (timer !== null) clearTimeout(timer)
    }
  }
}
