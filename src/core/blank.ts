/**
 * Whether a character is a blank as the regex class `\s` means it, decided for ASCII by its code:
 * the streamed-text paths ask this for every character they scan, and a regex call per character
 * cost more than the scan.
 */
const BLANK = /\s/

export function isBlankAt (text: string, i: number): boolean {
  const c = text.charCodeAt(i)
  if (c < 128) return c === 32 || (c >= 9 && c <= 13)
  return BLANK.test(text.charAt(i))
}
