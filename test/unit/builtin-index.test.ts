import { test } from 'node:test'
import assert from 'node:assert/strict'
import { promises as fs } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { BUILTIN_TOOL_NAMES, createBuiltinTools, type BuiltinToolOptions } from '../../src/tools/builtin/index.js'

function options (workspaceDir: string): BuiltinToolOptions {
  return {
    workspaceDir,
    shell: { timeoutMs: 60000, maxOutputBytes: 262144, blockHighRisk: true, requireApprovalForMedium: true, envAllowlist: ['PATH'] },
    files: { maxReadBytes: 1048576, maxWriteBytes: 1048576 },
    http: { allowHosts: [], allowPrivate: false, timeoutMs: 30000, maxResponseBytes: 524288, maxRedirects: 5 }
  }
}

test('createBuiltinTools returns the four built-in tools in a fixed order', async (t) => {
  const parent = await fs.mkdtemp(path.join(os.tmpdir(), 'tollgate-builtin-'))
  t.after(async () => { await fs.rm(parent, { recursive: true, force: true }) })
  const tools = createBuiltinTools(options(path.join(parent, 'ws')))
  assert.deepEqual(tools.map((tool) => tool.name), ['shell', 'file_read', 'file_write', 'http_request'])
  assert.deepEqual(tools.map((tool) => tool.name), [...BUILTIN_TOOL_NAMES])
  assert.ok(tools.every((tool) => tool.attribution.provenance === 'native' && tool.attribution.source === 'builtin'))
})

test('createBuiltinTools creates a missing workspace directory', async (t) => {
  const parent = await fs.mkdtemp(path.join(os.tmpdir(), 'tollgate-builtin-'))
  t.after(async () => { await fs.rm(parent, { recursive: true, force: true }) })
  const workspaceDir = path.join(parent, 'nested', 'ws')
  createBuiltinTools(options(workspaceDir))
  assert.equal((await fs.stat(workspaceDir)).isDirectory(), true)
})

test('createBuiltinTools refuses a relative workspace directory', () => {
  assert.throws(() => createBuiltinTools(options('relative/ws')), /absolute/)
})
