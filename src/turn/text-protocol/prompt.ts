/**
 * The system-prompt section that teaches a text-protocol model how to call tools.
 */

export interface ToolProtocolSpec {
  name: string
  description: string
  parameters: Record<string, unknown>
}

const PROTOCOL_RULES = [
  '## Tool Use Protocol',
  '',
  'To use a tool, wrap one JSON object per call in <tool_call></tool_call> tags, shaped {"name": "<tool>", "arguments": {…}}:',
  '',
  '<tool_call>',
  '{"name": "tool_name", "arguments": {"param": "value"}}',
  '</tool_call>',
  '',
  '- You may make several tool calls in one response: one <tool_call> block per call.',
  '- Tool results come back in <tool_result name="..."> tags; wait for them before relying on a result.',
  '- Output real <tool_call> tags to act. Never describe the steps you would take instead of calling the tool.',
  '- When no tool is needed, answer in plain language without tags.'
].join('\n')

function describeTool (spec: ToolProtocolSpec): string {
  return `**${spec.name}**: ${spec.description}\nParameters: \`${JSON.stringify(spec.parameters)}\``
}

/** Protocol rules, then `### Available Tools`; empty when there are no tools to offer. */
export function buildToolProtocolInstructions (specs: readonly ToolProtocolSpec[]): string {
  if (specs.length === 0) return ''
  return `${PROTOCOL_RULES}\n\n### Available Tools\n\n${specs.map(describeTool).join('\n\n')}`
}
