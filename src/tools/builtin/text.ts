/** Appends a notice as a line of its own, so it never fuses with the last line of tool output. */
export function appendNotice (text: string, notice: string): string {
  if (text === '' || text.endsWith('\n')) return text + notice
  return `${text}\n${notice}`
}
