/**
 * Model text streamed piece by piece (`text.delta`), scrubbed like every other rendering surface
 * (docs/decisions/0202). A secret can arrive split across pieces (`sk-pro` + `j-abc…`), and a
 * piece already shown cannot be taken back, so a piece is shown only up to where nothing that
 * follows can change it:
 *
 * - the last word is held while it could still become part of a secret: every single-token secret
 *   is one word, which may still grow. A word of letters and digits (with ordinary punctuation
 *   around them) is shown at once when no key shape can begin in it (secret-starts.ts), no
 *   credential context is in force, and a probe shows that no rule would take it for a value:
 *   the text so far with a run of token characters appended is scanned, and no secret it finds
 *   touches the word (`Bearer ab` or `password: hu` are held; `Hello` or ` the` go out at once);
 * - a quoted credential value that has opened and not closed is held from its name's separator;
 * - a private-key block whose END line has not come is held from its BEGIN line.
 *
 * What is released is scrubbed together with the last CONTEXT_CHARS of text already shown, so a
 * rule whose match begins there (`password = ` shown, the value arriving now; `Bearer ` then the
 * token) still finds it. Contexts such as an AWS key id stay for the rest of the stream. The cost
 * is one or two scrubs of a few hundred characters per piece (`npm run bench:scrub`), and a word
 * that could still be a secret goes out a word later than it came (decisions 0202, 0272).
 */
import { isBlankAt } from '../blank.js'
import { findSecretSpans, rewriteSecrets, scrubbedForm, type SecretContext } from './redact.js'
import { mayStartSecret } from './secret-starts.js'
import { OPEN_QUOTED_CREDENTIAL, PRIVATE_KEY_BEGIN } from './secret-rules.js'

/** Raw text already shown that later pieces are scrubbed with: longer than any rule's look back. */
const CONTEXT_CHARS = 256
/**
 * Held text is released, scrubbed as it stands, once it grows past this: a private key block
 * larger than any real key (16 KiB RSA keys are 13 KB) or a word this long is not worth a stall.
 */
const MAX_HELD_CHARS = 32 * 1024

/**
 * A word that may be shown before it ends: letters and digits (any script), apostrophes inside,
 * an opening bracket before and closing punctuation after. Anything else (`-`, `_`, `=`, `:` inside,
 * `/`, `@`, quotes) waits for the blank after it, as every word did before.
 */
const PLAIN_WORD = /^[([]?[\p{L}\p{N}'’]*[.,!?;:)\]]*$/u
/**
 * Appended to the text for the probe: token characters of every class the value rules take, as
 * many as makes the word's run exactly 40 long (an AWS secret key is exactly 40; the value then
 * also passes the 8 the assignment and bearer rules want), or 8 past a longer run. No anchor
 * starts with `q` or `7`.
 */
const PROBE = 'q7Q'.repeat(14)

/** Whether the character at `i` is one of `[A-Za-z0-9/+]` (by its code: this runs for every piece). */
function isTokenChar (text: string, i: number): boolean {
  const c = text.charCodeAt(i)
  return (c >= 97 && c <= 122) || (c >= 65 && c <= 90) || (c >= 48 && c <= 57) || c === 47 || c === 43
}

/** How many characters of `[A-Za-z0-9/+]` end `text` (scanned from the end, as `lastWordStart`), at most 40. */
function tokenRun (text: string): number {
  let n = 0
  while (n < 40 && n < text.length && isTokenChar(text, text.length - 1 - n)) n++
  return n
}
const NON_BLANK = /\S/
const OPEN_QUOTED = new RegExp(OPEN_QUOTED_CREDENTIAL)
const KEY_BEGIN = new RegExp(PRIVATE_KEY_BEGIN, 'g')
const KEY_END = '-----END'
const KEY_BEGIN_PREFIX = '-----BEGIN'

/**
 * Where the last word of `text` begins (its length when it ends with a blank). Scanned from the
 * end: a regex anchored at `$` would retry every position of a long held word.
 */
function lastWordStart (text: string): number {
  let at = text.length
  while (at > 0 && !isBlankAt(text, at - 1)) at--
  return at
}

/** Where in `text` a credential that cannot be complete yet begins, or -1. */
function openSecretStart (text: string): number {
  let start = -1
  KEY_BEGIN.lastIndex = 0
  // The patterns are tried only where what they must contain is there: a BEGIN line starts with
  // its dashes, an open quoted value needs a separator and a quote on the last line.
  if (text.includes(KEY_BEGIN_PREFIX)) {
    for (let m = KEY_BEGIN.exec(text); m !== null; m = KEY_BEGIN.exec(text)) {
      if (!text.includes(KEY_END, m.index + m[0].length)) {
        start = m.index
        break
      }
    }
  }
  const lineStart = text.lastIndexOf('\n') + 1
  const line = text.slice(lineStart)
  if (!mayOpenQuote(line)) return start
  const quoted = OPEN_QUOTED.exec(line)
  if (quoted !== null && (start === -1 || lineStart + quoted.index < start)) start = lineStart + quoted.index
  return start
}

function mayOpenQuote (line: string): boolean {
  return (line.includes('"') || line.includes("'")) && (line.includes(':') || line.includes('='))
}

export class StreamedTextScrubber {
  /** The end of the raw text already shown, kept for the rules' look back. */
  private shown = ''
  private pending = ''
  private readonly context: SecretContext = new Set()
  /**
   * This push's probe found no secret at all in the text, and all of it goes out: the release
   * need not scan it again (a secret of the text alone would also be one of the probe's).
   */
  private probedClean = false

  /** The next piece of text; answers what of the text so far may be shown now (maybe nothing). */
  push (text: string): string {
    this.pending += text
    const end = this.releasable()
    // Blanks alone wait for the word after them: no event for a lone space.
    return NON_BLANK.test(this.pending.slice(0, end)) ? this.release(end) : ''
  }

  /** The text is over (the model's answer ended, or another event comes between): the rest, scrubbed. */
  end (): string {
    this.probedClean = false
    return this.release(this.pending.length)
  }

  /** How much of `pending` nothing that follows can change. */
  private releasable (): number {
    this.probedClean = false
    const text = this.shown + this.pending
    let end = lastWordStart(this.pending)
    if (end < this.pending.length && this.plainWordIsOver(text)) end = this.pending.length
    const open = openSecretStart(text)
    if (open !== -1) {
      this.probedClean = false
      end = Math.min(end, Math.max(0, open - this.shown.length))
    }
    return this.pending.length - end > MAX_HELD_CHARS ? this.pending.length : end
  }

  /**
   * Whether the last word of `text` (shown in part already, maybe) can be shown now: it is plain,
   * no secret can begin in it, and no rule would mask it as the value it might be the start of.
   */
  private plainWordIsOver (text: string): boolean {
    if (this.context.size > 0) return false
    const start = lastWordStart(text)
    const word = text.slice(start)
    if (!PLAIN_WORD.test(word) || mayStartSecret(word)) return false
    const run = tokenRun(text)
    const probe = `${text}${PROBE.slice(0, run < 40 ? 40 - run : 8)} `
    const spans = findSecretSpans(probe, new Set())
    if (spans.length === 0) {
      // Past a 40-long run the probe's characters could break a secret the text alone holds (an
      // AWS secret key is exactly 40, `(?![A-Za-z0-9/+=])` after it): then the release scans.
      this.probedClean = run < 40
      return true
    }
    return spans.every((s) => s.secretEnd <= start || s.secretStart >= text.length)
  }

  private release (end: number): string {
    if (end === 0) return ''
    const text = this.shown + this.pending.slice(0, end)
    const clean = this.probedClean && end === this.pending.length
    const out = clean ? this.pending : rewriteSecrets(text, findSecretSpans(text, this.context), scrubbedForm, { from: this.shown.length })
    this.shown = text.slice(-CONTEXT_CHARS)
    this.pending = this.pending.slice(end)
    return out
  }
}
