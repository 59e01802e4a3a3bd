/** Excluded names compare trimmed and case-insensitively, in spec building and execution alike. */
export function normaliseToolName (name: string): string {
  return name.trim().toLowerCase()
}

export interface ToolNarrowing {
  allow?: readonly string[]
  exclude?: readonly string[]
}
