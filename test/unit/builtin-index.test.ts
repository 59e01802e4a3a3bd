import { test } from 'node:test'
import assert from 'node:assert/strict'
import { BUILTIN_TOOL_NAMES, createBuiltinTools, type BuiltinToolOptions } from '../../src/tools/builtin/index.js'
import { unconfinedLauncher } from '../../src/tools/builtin/sandbox.js'
import { WorkspaceFiles } from '../../src/tools/builtin/workspace-files.js'

function options (withShell: boolean): BuiltinToolOptions {
  const shell = {
    timeoutMs: 60000, maxOutputBytes: 262144, blockHighRisk: true, requireApprovalForMedium: true, envAllowlist: ['PATH'], progressAfterMs: 1000
  }
  return {
    shell: withShell ? { ...shell, launcher: unconfinedLauncher(), ledger: { record: () => () => {} } } : null,
    files: { maxReadBytes: 1048576, maxWriteBytes: 1048576, workspace: new WorkspaceFiles({ root: '/nonexistent' }) },
    http: { allowHosts: [], allowPrivate: false, timeoutMs: 30000, maxResponseBytes: 524288, maxRedirects: 5 }
  }
}

test('createBuiltinTools returns the four built-in tools in a fixed order', () => {
  const tools = createBuiltinTools(options(true))
  assert.deepEqual(tools.map((tool) => tool.name), ['shell', 'file_read', 'file_write', 'http_request'])
  assert.deepEqual(tools.map((tool) => tool.name), [...BUILTIN_TOOL_NAMES])
  assert.ok(tools.every((tool) => tool.attribution.provenance === 'native' && tool.attribution.source === 'builtin'))
})

test('createBuiltinTools leaves shell out when it has no launcher', () => {
  assert.deepEqual(createBuiltinTools(options(false)).map((tool) => tool.name), ['file_read', 'file_write', 'http_request'])
})
