/** Shapes shared by the text tool-call protocol's steps (kept apart so no step imports the front file). */
export interface ParsedToolCall {
  /** Alias-mapped (`bash` → `shell`) and namespace-stripped (`functions.shell` → `shell`). */
  name: string
  arguments: Record<string, unknown>
  /** The provider's call id when the model supplied one. */
  id: string | null
  /** Set when the model's arguments could not be decoded; `arguments` is then `{}`. */
  argumentsError?: string
}

export interface TextParseResult {
  /** Visible prose around the calls, joined by '\n', trimmed. */
  text: string
  calls: ParsedToolCall[]
}
