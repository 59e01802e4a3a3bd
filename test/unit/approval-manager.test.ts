import { test } from 'node:test'
import assert from 'node:assert/strict'
import { ApprovalManager } from '../../src/approval/manager.js'
import type { RiskProfileConfig } from '../../schemas/config.js'

function manager (profile: Partial<RiskProfileConfig> = {}, allowlist: string[] = []): ApprovalManager {
  return new ApprovalManager({ level: 'supervised', auto_approve: ['file_read', 'tool_search'], always_ask: [], excluded_tools: [], allowed_tools: [], shell_network: false, ...profile }, new Set(allowlist))
}

test('a supervised profile prompts for tools that are not auto-approved', () => {
  assert.equal(manager().requirement('shell'), 'prompt')
  assert.equal(manager().requirement('some_unknown_tool'), 'prompt')
})

test('auto_approve tools skip the prompt', () => {
  assert.equal(manager().requirement('file_read'), 'approved')
  assert.equal(manager({ auto_approve: ['*'] }).requirement('shell'), 'approved')
})

test('level full approves everything, even always_ask tools', () => {
  assert.equal(manager({ level: 'full', always_ask: ['shell'] }).requirement('shell'), 'approved')
})

test('level readonly never prompts and never approves', () => {
  assert.equal(manager({ level: 'readonly' }).requirement('shell'), 'not_required')
  assert.equal(manager({ level: 'readonly' }).needsApproval('shell'), false)
})

test('always_ask beats auto_approve and the session allowlist', () => {
  assert.equal(manager({ always_ask: ['file_read'] }).requirement('file_read'), 'prompt')
  assert.equal(manager({ always_ask: ['*'] }, ['shell']).requirement('shell'), 'prompt')
})

test('an always grant approves the tool for the session; yes grants nothing', () => {
  const allowlist = new Set<string>()
  const m = new ApprovalManager({ level: 'supervised', auto_approve: [], always_ask: [], excluded_tools: [], allowed_tools: [], shell_network: false }, allowlist)
  assert.equal(m.requirement('shell'), 'prompt')
  m.grantAlways('shell')
  assert.equal(m.requirement('shell'), 'approved')
  assert.deepEqual([...allowlist], ['shell'], 'the grant lands in the session set it was given')
  assert.equal(m.requirement('file_write'), 'prompt')
})
