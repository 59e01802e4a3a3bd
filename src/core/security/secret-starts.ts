/**
 * Where a secret could begin in a word that is still being streamed. The rules whose secret starts
 * where the rule matches (issuers' key shapes, JWTs) match only from their anchor, and those
 * anchors are short literal alternations (`sk-`, `gh[pousr]_`, `AKIA`, `eyJ`): a word none of whose
 * starting points agrees with any of them, character by character, can never become such a secret,
 * however it goes on. text-stream.ts uses this to show such a word at once instead of a word late.
 */
import { SECRET_RULES } from './secret-rules.js'

/** One anchor spelled out: the characters each position admits. */
type Spelling = readonly string[]

/** A small reader of the anchor syntax the rules use: literals, `\x` escapes, `[...]` classes, `(?:a|b)` groups. */
class AnchorReader {
  private at = 0

  constructor (private readonly source: string) {}

  /** Every spelling of the alternation from here to its end (or to the `)` closing its group). */
  alternatives (): Spelling[] {
    const out: Spelling[] = []
    for (;;) {
      out.push(...this.sequence())
      if (this.source[this.at] !== '|') return out
      this.at++
    }
  }

  private sequence (): Spelling[] {
    let spellings: Spelling[] = [[]]
    while (this.at < this.source.length && this.source[this.at] !== '|' && this.source[this.at] !== ')') {
      const next = this.item()
      spellings = spellings.flatMap((s) => next.map((n) => [...s, ...n]))
    }
    return spellings
  }

  private item (): Spelling[] {
    const c = this.source[this.at] as string
    if (c === '(') {
      if (this.source.slice(this.at, this.at + 3) !== '(?:') throw new Error(`anchor syntax not supported: ${this.source}`)
      this.at += 3
      const inner = this.alternatives()
      this.at++
      return inner
    }
    if (c === '[') return [[this.charClass()]]
    if (c === '\\') {
      this.at += 2
      return [[this.source[this.at - 1] as string]]
    }
    if ('*+?{}^$.'.includes(c)) throw new Error(`anchor syntax not supported: ${this.source}`)
    this.at++
    return [[c]]
  }

  private charClass (): string {
    const end = this.source.indexOf(']', this.at)
    const body = this.source.slice(this.at + 1, end)
    this.at = end + 1
    let chars = ''
    for (let i = 0; i < body.length; i++) {
      if (body[i + 1] === '-' && i + 2 < body.length) {
        for (let code = body.charCodeAt(i); code <= body.charCodeAt(i + 2); code++) chars += String.fromCharCode(code)
        i += 2
      } else {
        chars += body[i] as string
      }
    }
    return chars
  }
}

/** The anchors of the rules whose secret begins at the anchor itself, spelled out. */
export function secretStartSpellings (): Spelling[] {
  return SECRET_RULES
    .filter((rule) => rule.pattern.startsWith('(?<secret>'))
    .flatMap((rule) => new AnchorReader(rule.anchor).alternatives())
}

/** The spellings by the characters their first position admits: a word is compared only with those its character can begin. */
const BY_FIRST = new Map<string, Spelling[]>()
for (const spelling of secretStartSpellings()) {
  for (const c of new Set(spelling[0] ?? '')) BY_FIRST.set(c, [...(BY_FIRST.get(c) ?? []), spelling])
}

/**
 * A secret never starts right after a word character (`\w`: ASCII letters, digits, `_`): the key
 * shapes look behind for none of `[A-Za-z0-9_-]`, JWTs for a `\b`. (`-` is left out here, so a
 * JWT after one is still found.)
 */
function isWordChar (c: number): boolean {
  return (c >= 97 && c <= 122) || (c >= 65 && c <= 90) || (c >= 48 && c <= 57) || c === 95
}

function agrees (word: string, from: number, spelling: Spelling): boolean {
  const n = Math.min(spelling.length, word.length - from)
  for (let i = 0; i < n; i++) {
    if (!(spelling[i] as string).includes(word.charAt(from + i))) return false
  }
  return true
}

/**
 * Whether some continuation of `word` could hold a key-shape or JWT secret that begins inside it:
 * at one of its starting points (its start, or after a character no token has) it agrees with an
 * anchor as far as both go.
 */
export function mayStartSecret (word: string): boolean {
  for (let from = 0; from < word.length; from++) {
    if (from > 0 && isWordChar(word.charCodeAt(from - 1))) continue
    if (BY_FIRST.get(word.charAt(from))?.some((s) => agrees(word, from, s)) === true) return true
  }
  return false
}
