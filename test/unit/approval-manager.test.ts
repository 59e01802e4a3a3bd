import { test } from 'node:test'
import assert from 'node:assert/strict'
import { SessionGrants, normalizeCommand } from '../../src/approval/grants.js'
import { ApprovalManager } from '../../src/approval/policy.js'
import { classifyRisk } from '../../src/approval/risk.js'
import { defineTool, ok, type Tool } from '../../src/tools/contract.js'
import type { RiskProfileConfig } from '../../schemas/config.js'

function manager (profile: Partial<RiskProfileConfig> = {}, grants = new SessionGrants()): ApprovalManager {
  const base: RiskProfileConfig = {
    level: 'supervised', auto_approve: ['file_read', 'tool_search'], always_ask: [], excluded_tools: [], allowed_tools: [], shell_network: false, permissions: { allow: [], ask: [], deny: [] }, permissions_mode: 'enforce'
  }
  return new ApprovalManager({ ...base, ...profile }, grants)
}

test('a supervised profile prompts for tools that are not auto-approved', () => {
  assert.equal(manager().requirement('shell', { command: 'ls' }), 'prompt')
  assert.equal(manager().requirement('some_unknown_tool'), 'prompt')
})

test('auto_approve tools skip the prompt', () => {
  assert.equal(manager().requirement('file_read'), 'approved')
  assert.equal(manager({ auto_approve: ['*'] }).requirement('shell', { command: 'rm x' }), 'approved')
})

test('level full approves everything, even always_ask tools', () => {
  assert.equal(manager({ level: 'full', always_ask: ['shell'] }).requirement('shell', { command: 'ls' }), 'approved')
})

test('level readonly never prompts and says the profile is read-only', () => {
  const m = manager({ level: 'readonly' })
  assert.equal(m.requirement('shell', { command: 'ls' }), 'not_required')
  assert.equal(m.needsApproval('shell', { command: 'ls' }), false)
  assert.equal(m.readOnly, true)
  assert.equal(manager().readOnly, false)
})

test('always_ask beats auto_approve and the session grants', () => {
  assert.equal(manager({ always_ask: ['file_read'] }).requirement('file_read'), 'prompt')
  assert.equal(manager({ always_ask: ['*'] }, new SessionGrants([{ tool: 'risky' }])).requirement('risky'), 'prompt')
})

test('always on a tool other than shell grants the whole tool for the session; yes grants nothing', () => {
  const grants = new SessionGrants()
  const m = manager({ auto_approve: [] }, grants)
  assert.equal(m.requirement('file_write', { path: 'a' }), 'prompt')
  m.grantAlways('file_write', { path: 'a' })
  assert.equal(m.requirement('file_write', { path: 'b', content: 'other' }), 'approved')
  assert.deepEqual(grants.list(), [{ tool: 'file_write' }], 'the grant lands in the session set it was given')
  assert.equal(m.requirement('http_request', { url: 'https://x' }), 'prompt')
})

test('always on shell grants the exact command only', () => {
  const m = manager()
  m.grantAlways('shell', { command: 'ls -la', approved: false })
  assert.equal(m.requirement('shell', { command: 'ls -la' }), 'approved')
  assert.equal(m.requirement('shell', { command: 'touch PWN && rm -f PWN' }), 'prompt')
  assert.equal(m.requirement('shell', { command: 'ls -la /' }), 'prompt')
  assert.deepEqual(m.alwaysAllowed(), [{ tool: 'shell', command: 'ls -la' }])
})

test('a shell command grant matches the same command with other blanks outside quotes', () => {
  const m = manager()
  m.grantAlways('shell', { command: '  ls   -la\t| wc -l ' })
  assert.equal(m.requirement('shell', { command: 'ls -la | wc -l' }), 'approved')
  assert.equal(m.requirement('shell', { command: 'ls -la | wc  -l' }), 'approved')
})

test('blanks inside quotes, escaped blanks and line breaks are part of the command', () => {
  assert.equal(normalizeCommand('echo  "a   b"  \'c  d\'  e\\  f'), 'echo "a   b" \'c  d\' e\\  f')
  assert.equal(normalizeCommand('echo "x \\"  y"   z'), 'echo "x \\"  y" z')
  assert.notEqual(normalizeCommand('ls\ntouch x'), normalizeCommand('ls touch x'))
  assert.notEqual(normalizeCommand('rm "a  b"'), normalizeCommand('rm "a b"'))
})

test('stored grants load as tools and commands, and a bare shell grant of an old record is dropped', () => {
  const grants = new SessionGrants(['risky', 'shell', { tool: 'shell', command: 'pwd' }, { tool: 'file_write' }])
  assert.deepEqual(grants.list(), [{ tool: 'file_write' }, { tool: 'risky' }, { tool: 'shell', command: 'pwd' }])
  assert.equal(grants.allows('shell', { command: 'ls' }), false)
  assert.equal(grants.allows('shell', { command: ' pwd ' }), true)
})

test('a shell call without a command string grants nothing', () => {
  const grants = new SessionGrants()
  grants.grant('shell', { cmd: 'ls' })
  assert.deepEqual(grants.list(), [])
})

test('the reason of a prompt names the rule that asked', () => {
  assert.equal(manager({ always_ask: ['*'] }).promptReason('file_read'), 'The risk profile asks about every tool call (always_ask = ["*"]).')
  assert.equal(manager({ always_ask: ['shell'] }).promptReason('shell'), 'The risk profile always asks about \'shell\' (listed in always_ask).')
  assert.match(manager().promptReason('file_write'), /^'file_write' is not auto-approved by the risk profile .* no "always" grant in this session\.$/)
})

test('the risk label: shell by its command, other tools low for a read and medium otherwise', () => {
  const tool = (name: string, effects?: 'read' | 'write'): Tool => defineTool({
    name, description: 'test', parameters: { type: 'object' }, ...(effects === undefined ? {} : { effects }), execute: async () => ok('')
  })
  assert.equal(classifyRisk(tool('shell'), { command: 'ls -la | grep x' }), 'low')
  assert.equal(classifyRisk(tool('shell'), { command: 'touch a.txt' }), 'medium')
  assert.equal(classifyRisk(tool('shell'), { command: 'rm -rf /' }), 'high')
  assert.equal(classifyRisk(tool('reader', 'read'), {}), 'low')
  assert.equal(classifyRisk(tool('writer', 'write'), {}), 'medium')
  assert.equal(classifyRisk(tool('unclassified'), {}), 'medium')
})
