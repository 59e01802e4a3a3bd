/**
 * Text shown line by line (a running command's output as `tool.progress`) loses the context a
 * multi-line secret needs: the body lines of a PEM private key look like any base64, and the
 * scrubber recognises the key only from its BEGIN line. This guard hides the lines after a
 * private-key BEGIN line (which is shown, and scrubbed as usual) through its END line. Single-line
 * secrets stay the scrubber's job (`redact.ts`).
 */
import { PRIVATE_KEY_BEGIN } from './secret-rules.js'

const BEGIN = new RegExp(PRIVATE_KEY_BEGIN)
const END = /-----END[ A-Z0-9]{0,40}-----/

/** One guard per line stream: answers the line to show, or null for a line inside a key block. */
export function privateKeyLineGuard (): (line: string) => string | null {
  let inside = false
  return (line) => {
    if (inside) {
      if (END.test(line)) inside = false
      return null
    }
    const begin = BEGIN.exec(line)
    if (begin !== null && !END.test(line.slice(begin.index + begin[0].length))) inside = true
    return line
  }
}
