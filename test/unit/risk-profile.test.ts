/**
 * The risk-profile table of the README (level × tool call → outcome), checked for every tool kind
 * with the real tools: built-ins, MCP wrappers, tool_search, delegate, an extension tool.
 */
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { DEFAULT_AUTO_APPROVE, type RiskProfileConfig } from '../../schemas/config.js'
import { SessionGrants } from '../../src/approval/grants.js'
import { ApprovalManager } from '../../src/approval/policy.js'
import { readOnlyDeniedText, readOnlyRefusal } from '../../src/approval/read-only.js'
import { loadConfig } from '../../src/core/config.js'
import { createDelegateTool } from '../../src/turn/subturn-tool.js'
import { TOOL_SEARCH_TOOL } from '../../src/tools/scope/tool-search.js'
import { wrapMcpTool, type McpToolDefinition } from '../../src/mcp/wrap.js'
import { createBuiltinTools } from '../../src/tools/builtin/index.js'
import { unconfinedLauncher } from '../../src/tools/builtin/sandbox.js'
import { WorkspaceFiles } from '../../src/tools/builtin/workspace-files.js'
import { callEffect, defineTool, ok, type Tool } from '../../src/tools/contract.js'
import { agentDirectory } from '../../src/service/agent-resolution.js'

type Outcome = 'runs' | 'asks' | 'refused'
type Level = RiskProfileConfig['level']

function profile (level: Level, autoApprove: string[] = DEFAULT_AUTO_APPROVE): ApprovalManager {
  const risk: RiskProfileConfig = {
    level, auto_approve: autoApprove, always_ask: [], excluded_tools: [], allowed_tools: [], shell_network: false, permissions: { allow: [], ask: [], deny: [] }, permissions_mode: 'enforce'
  }
  return new ApprovalManager(risk, new SessionGrants())
}

function outcome (level: Level, tool: Tool, args: Record<string, unknown>): Outcome {
  const approval = profile(level)
  if (readOnlyRefusal(approval, tool, args) !== null) return 'refused'
  return approval.requirement(tool.name, args) === 'prompt' ? 'asks' : 'runs'
}

const builtins = new Map(createBuiltinTools({
  shell: {
    timeoutMs: 1000, maxOutputBytes: 1024, blockHighRisk: true, requireApprovalForMedium: true, envAllowlist: [], progressAfterMs: 1000,
    launcher: unconfinedLauncher(), ledger: { record: () => () => {} }
  },
  files: { maxReadBytes: 1024, maxWriteBytes: 1024, workspace: new WorkspaceFiles({ root: '/nonexistent' }) },
  http: { timeoutMs: 1000, maxResponseBytes: 1024, maxRedirects: 0, allowHosts: [], allowPrivate: false }
}).map((t) => [t.name, t]))

function builtin (name: string): Tool {
  const tool = builtins.get(name)
  assert.ok(tool !== undefined, name)
  return tool
}

function mcp (annotations?: McpToolDefinition['annotations']): Tool {
  const def: McpToolDefinition = { name: 'lookup', inputSchema: { type: 'object' }, ...(annotations === undefined ? {} : { annotations }) }
  const wrapped = wrapMcpTool('files', def, async () => ok(''))
  assert.ok(!('skip' in wrapped))
  return wrapped
}

const extension = defineTool({
  name: 'deploy',
  description: 'an embedder tool that does not classify its calls',
  parameters: { type: 'object' },
  execute: async () => ok('')
})
const delegate = createDelegateTool({ agents: agentDirectory(loadConfig({ env: {} }), new Map()) })

/** [tool, arguments, readonly, supervised (default auto_approve), full] */
const TABLE: Array<[string, Tool, Record<string, unknown>, Outcome, Outcome, Outcome]> = [
  ['file_read', builtin('file_read'), { path: 'notes.txt' }, 'runs', 'runs', 'runs'],
  ['file_write', builtin('file_write'), { path: 'notes.txt', content: 'x' }, 'refused', 'asks', 'runs'],
  ['shell, read-only pipeline', builtin('shell'), { command: 'ls -la | wc -l' }, 'runs', 'asks', 'runs'],
  ['shell, other command', builtin('shell'), { command: 'touch PWN' }, 'refused', 'asks', 'runs'],
  ['shell, redirection', builtin('shell'), { command: 'echo x > notes.txt' }, 'refused', 'asks', 'runs'],
  ['shell, high-risk command', builtin('shell'), { command: 'rm -rf /' }, 'refused', 'asks', 'runs'],
  ['http_request GET', builtin('http_request'), { url: 'https://example.com/' }, 'runs', 'asks', 'runs'],
  ['http_request HEAD', builtin('http_request'), { url: 'https://example.com/', method: 'HEAD' }, 'runs', 'asks', 'runs'],
  ['http_request POST', builtin('http_request'), { url: 'https://example.com/', method: 'POST', body: '{}' }, 'refused', 'asks', 'runs'],
  ['http_request DELETE', builtin('http_request'), { url: 'https://example.com/x', method: 'DELETE' }, 'refused', 'asks', 'runs'],
  ['MCP tool with readOnlyHint', mcp({ readOnlyHint: true }), {}, 'runs', 'asks', 'runs'],
  ['MCP tool with readOnlyHint false', mcp({ readOnlyHint: false }), {}, 'refused', 'asks', 'runs'],
  ['MCP tool without annotations', mcp(), {}, 'refused', 'asks', 'runs'],
  ['tool_search', TOOL_SEARCH_TOOL, { query: 'select:files__lookup' }, 'runs', 'runs', 'runs'],
  ['delegate', delegate, { task: 'summarise notes.txt' }, 'runs', 'asks', 'runs'],
  ['extension tool without effects', extension, {}, 'refused', 'asks', 'runs']
]

for (const [name, tool, args, readonly, supervised, full] of TABLE) {
  test(`risk profiles: ${name} → readonly ${readonly}, supervised ${supervised}, full ${full}`, () => {
    assert.deepEqual(
      [outcome('readonly', tool, args), outcome('supervised', tool, args), outcome('full', tool, args)],
      [readonly, supervised, full]
    )
  })
}

test('a refused call is told that the risk profile is read-only and that no person was asked', () => {
  const text = readOnlyRefusal(profile('readonly', []), builtin('file_write'), { path: 'a', content: 'b' })
  assert.equal(text, readOnlyDeniedText('file_write'))
  assert.match(text ?? '', /read-only risk profile/)
  assert.match(text ?? '', /no person was asked/)
})

test('a classifier that throws counts as side-effecting', () => {
  const odd = defineTool({
    name: 'odd', description: 'x', parameters: { type: 'object' }, effects: () => { throw new Error('boom') }, execute: async () => ok('')
  })
  assert.equal(callEffect(odd, {}), 'write')
})
