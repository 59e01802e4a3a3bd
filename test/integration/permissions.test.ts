import { test } from 'node:test'
import assert from 'node:assert/strict'
import { access, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { deepMerge } from '../../src/core/config.js'
import { startFakeProvider } from '../helpers/fake-provider.js'
import { startGateway, type TestGateway } from '../helpers/gateway.js'
import { BYPASS_CORPUS } from '../fixtures/shell-bypass-corpus.js'

type After = { after: (fn: () => Promise<void>) => void }

const ACCEPTANCE_RULES = { allow: ['shell(ls:*)', 'shell(git status)', 'file_write(notes/**)'], deny: ['shell(rm:*)'] }

async function permissionsGateway (
  t: After, risk: Record<string, unknown> = { permissions: ACCEPTANCE_RULES }, overrides: unknown = {}
): Promise<TestGateway> {
  const g = await startGateway({
    overrides: deepMerge({
      agents: { default: { tools: ['shell', 'file_write'] } },
      risk_profiles: { default: risk }
    }, overrides)
  })
  t.after(async () => { await g.close() })
  return g
}

async function exists (path: string): Promise<boolean> {
  return await access(path).then(() => true, () => false)
}

interface CallOutcome { command: string, status: string, output: string }

/** One non-interactive turn whose model asks for these shell commands in one response. */
async function runCommands (g: TestGateway, commands: readonly string[]): Promise<CallOutcome[]> {
  g.provider.enqueue({
    toolCalls: commands.map((command, i) => ({ id: `c${i}`, name: 'shell', arguments: { command } }))
  }, { text: 'done' })
  const res = await g.http('POST', '/v1/turns?wait=true', { message: 'go', interactive: false })
  assert.equal(res.status, 200, JSON.stringify(res.body))
  const events = await g.http('GET', `/v1/turns/${String(res.body.turn_id)}/events`)
  const results = (events.body.events as Array<{ event: { kind: string, call_id: string, status: string, output: string } }>)
    .filter((e) => e.event.kind === 'tool_result').map((e) => e.event)
  assert.equal(results.length, commands.length)
  return commands.map((command, i) => {
    const result = results[i] as { status: string, output: string }
    return { command, status: result.status, output: result.output }
  })
}

test('with allow and deny rules on a non-interactive turn only allowed plans run, and a denied one names its rule', async (t) => {
  const g = await permissionsGateway(t)
  await writeFile(join(g.workspace, 'keep.txt'), 'keep')
  const outcomes = await runCommands(g, [
    'ls -la', 'ls; touch p', 'ls | tee p', 'ls && touch p',
    'ls && rm -f keep.txt', 'env X=1 rm -f keep.txt', "sh -c 'rm -f keep.txt'", 'command rm -f keep.txt', 'nice rm -f keep.txt',
    'ls $(touch p)', 'ls `touch p`', 'eval touch p', 'ls > p',
    'git status', 'git status; touch p'
  ])
  const status = Object.fromEntries(outcomes.map((o) => [o.command, o.status]))
  assert.equal(status['ls -la'], 'ok')
  assert.match(outcomes[0]?.output ?? '', /keep\.txt/)
  for (const o of outcomes.slice(1, 13)) assert.equal(o.status, 'denied', o.command)
  for (const o of outcomes.slice(4, 9)) assert.match(o.output, /denied by shell\(rm:\*\)/, o.command)
  assert.match(outcomes[1]?.output ?? '', /`touch p`/, 'the model is told which part needed a person')
  assert.match(outcomes[9]?.output ?? '', /command or process substitution/)
  assert.match(outcomes[12]?.output ?? '', /redirected to a file/)
  // `git status` is allowed by its rule; outside a repository git itself fails, which is not a denial.
  assert.notEqual(status['git status'], 'denied')
  assert.equal(status['git status; touch p'], 'denied')
  assert.equal(await exists(join(g.workspace, 'keep.txt')), true)
  assert.equal(await exists(join(g.workspace, 'p')), false)
})

test('every spelling of the bypass corpus ends denied on a non-interactive turn and nothing runs', async (t) => {
  const g = await permissionsGateway(t)
  for (let i = 0; i < BYPASS_CORPUS.length; i += 20) {
    const outcomes = await runCommands(g, BYPASS_CORPUS.slice(i, i + 20))
    for (const o of outcomes) assert.equal(o.status, 'denied', `${JSON.stringify(o.command)} → ${o.status}: ${o.output}`)
  }
  assert.equal(await exists(join(g.workspace, 'p')), false)
})

test('a file_write rule allows writes under its glob only', async (t) => {
  const g = await permissionsGateway(t)
  g.provider.enqueue({
    toolCalls: [
      { id: 'w1', name: 'file_write', arguments: { path: 'notes/a.txt', content: 'a' } },
      { id: 'w2', name: 'file_write', arguments: { path: 'other.txt', content: 'b' } }
    ]
  }, { text: 'done' })
  const res = await g.http('POST', '/v1/turns?wait=true', { message: 'write', interactive: false })
  assert.deepEqual(res.body.tool_calls.map((c: { status: string }) => c.status), ['ok', 'denied'])
  assert.equal(await exists(join(g.workspace, 'notes', 'a.txt')), true)
  assert.equal(await exists(join(g.workspace, 'other.txt')), false)
})

test('approval.requested shows which part of the command needs the answer, and always grants only the plan\'s simple commands', async (t) => {
  const g = await permissionsGateway(t)
  const ws = await g.socket()
  g.provider.enqueue({ toolCalls: [{ id: 'a1', name: 'shell', arguments: { command: 'ls && touch p' } }] }, { text: 'one' })
  const accepted = await ws.request({ type: 'turn.start', message: 'go' })
  const requested = await ws.waitForEvent(accepted.turn_id as string, (e) => e.kind === 'approval.requested')
  assert.ok(requested.event.kind === 'approval.requested')
  assert.equal(requested.event.rule, 'default')
  assert.deepEqual(requested.event.needs, ['touch p: no rule allows it'])
  assert.match(requested.event.reason, /not allowed by any rule: `touch p`/)
  await ws.request({ type: 'approval.respond', request_id: requested.event.request_id, decision: 'always' })
  await ws.waitForTerminal(accepted.turn_id as string)
  assert.equal(await exists(join(g.workspace, 'p')), true)
  const session = await g.http('GET', `/v1/turns/${String(accepted.turn_id)}`)
  const grants = await g.http('GET', `/v1/sessions/${String(session.body.session_id)}`)
  assert.deepEqual(grants.body.always_allowed, [{ tool: 'shell', command: 'ls' }, { tool: 'shell', command: 'touch p' }])
})

test('an unknown tool in a rule stops the gateway from starting', async (t) => {
  const provider = await startFakeProvider()
  t.after(async () => { await provider.close() })
  await assert.rejects(startGateway({ provider, overrides: { risk_profiles: { default: { permissions: { allow: ['shel(ls)'] } } } } }),
    /risk_profiles\.default\.permissions: "shel\(ls\)" names an unknown tool "shel"/)
})

test('in shadow mode the old decision stands and the would-be decisions are counted by rule and outcome', async (t) => {
  const g = await permissionsGateway(t, { permissions: ACCEPTANCE_RULES, permissions_mode: 'shadow', auto_approve: ['shell'] })
  await writeFile(join(g.workspace, 'keep.txt'), 'keep')
  const outcomes = await runCommands(g, ['ls', 'rm -f keep.txt', 'touch p'])
  assert.deepEqual(outcomes.map((o) => o.status), ['ok', 'ok', 'ok'], 'the profile auto-approves shell, as before the rules')
  assert.equal(await exists(join(g.workspace, 'keep.txt')), false)
  const metrics = await g.http('GET', '/metrics')
  const text = String(metrics.body)
  assert.match(text, /tollgate_permission_decisions_total\{rule="shell\(ls:\*\)",outcome="allow",mode="shadow"\} 1/)
  assert.match(text, /tollgate_permission_decisions_total\{rule="shell\(rm:\*\)",outcome="deny",mode="shadow"\} 1/)
  assert.match(text, /tollgate_permission_decisions_total\{rule="default",outcome="default",mode="shadow"\} 1/)
})
