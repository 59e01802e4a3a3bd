/** Display helpers shared by the browser page and the terminal client (platform-neutral). */

/** A result's output, plus its error when that says something the output does not already say. */
export function resultText (output: string, error: string | undefined): string {
  if (error === undefined || error === '' || output.includes(error)) return output
  return output === '' ? error : `${output}\n${error}`
}
