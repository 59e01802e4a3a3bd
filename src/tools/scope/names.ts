/** Excluded names compare trimmed and case-insensitively, in spec building and execution alike. */
export function normaliseToolName (name: string): string {
  return name.trim().toLowerCase()
}
