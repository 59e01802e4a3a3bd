import { test } from 'node:test'
import assert from 'node:assert/strict'
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import type { EventEnvelope } from '../../schemas/events.js'
import { requestIdOf, type TestGateway } from '../helpers/gateway.js'
import { captureLogs } from '../helpers/log-capture.js'
import { startProbeGateway } from '../helpers/tools.js'
import { turnEvents } from '../helpers/turns.js'

const KV_DECEPTION = 'echo \'password="\'; touch PWN_KV; echo \'"\''
const URL_DECEPTION = 'echo http://u:$(touch${IFS}PWN_URL)@example.com'

/** Starts a turn whose model asks for one shell call, waits for its approval request and answers no. */
async function askAndDeny (g: TestGateway, command: string): Promise<{ turnId: string, requested: EventEnvelope }> {
  g.provider.enqueue({ toolCalls: [{ id: 'c1', name: 'shell', arguments: { command } }] }, { text: 'ok' })
  const ws = await g.socket()
  const accepted = await ws.request({ type: 'turn.start', message: 'go' })
  const requested = await ws.waitForEvent(accepted.turn_id, (e) => e.kind === 'approval.requested')
  await ws.request({ type: 'approval.respond', request_id: requestIdOf(requested), decision: 'no' })
  await ws.waitForTerminal(accepted.turn_id)
  return { turnId: accepted.turn_id, requested }
}

function display (e: EventEnvelope): Array<{ name: string, value: string }> {
  assert.equal(e.event.kind, 'approval.requested')
  return e.event.kind === 'approval.requested' ? e.event.display : []
}

const DECEPTIONS = [['password-assignment', KV_DECEPTION, 'touch PWN_KV'], ['URL-password', URL_DECEPTION, 'touch${IFS}PWN_URL']] as const

for (const [name, command, marker] of DECEPTIONS) {
  test(`the ${name} deception reaches the approver exactly, touch included, and stays masked in the audit and logs`, async (t) => {
    const logs = captureLogs('info')
    const { g } = await startProbeGateway(t, {}, { logger: logs.logger })
    const { turnId, requested } = await askAndDeny(g, command)
    assert.deepEqual(display(requested), [{ name: 'command', value: command }])
    const replayed = (await turnEvents(g, turnId)).find((e) => e.event.kind === 'approval.requested')
    assert.deepEqual(replayed === undefined ? null : display(replayed), [{ name: 'command', value: command }], 'replay shows the same')

    const turn = await g.http('GET', `/v1/turns/${turnId}`)
    const summary: string = turn.body.approvals[0].arguments_summary
    assert.ok(summary.includes('[REDACTED]') || summary.includes('****'), summary)
    assert.ok(!summary.includes(marker), 'the audit keeps the scrubbed form')
    assert.ok(!logs.text().includes(marker), 'no log line shows the unmasked form')
    assert.equal(existsSync(join(g.workspace, 'PWN_KV')) || existsSync(join(g.workspace, 'PWN_URL')), false)
  })
}

test('bidi overrides and zero-width characters in a command reach the approver as escapes', async (t) => {
  const { g } = await startProbeGateway(t)
  const { requested } = await askAndDeny(g, 'echo safe\u202E; touch PWN_BIDI \u2066#\u200B')
  assert.deepEqual(display(requested), [{ name: 'command', value: 'echo safe‹U+202E›; touch PWN_BIDI ‹U+2066›#‹U+200B›' }])
})

test('a command padded past any screen width reaches the approver whole', async (t) => {
  const { g } = await startProbeGateway(t)
  const command = `ls${' '.repeat(300)}; touch PWN_TAIL`
  const { turnId, requested } = await askAndDeny(g, command)
  assert.deepEqual(display(requested), [{ name: 'command', value: command }])
  const turn = await g.http('GET', `/v1/turns/${turnId}`)
  assert.equal(turn.body.approvals[0].arguments_summary, `command: ${command}`, 'the audit record is not cut either')
})

test('a multi-line command shows each line break to the approver', async (t) => {
  const { g } = await startProbeGateway(t)
  const { requested } = await askAndDeny(g, 'echo hi\ntouch PWN_LINE')
  assert.deepEqual(display(requested), [{ name: 'command', value: 'echo hi⏎\ntouch PWN_LINE' }])
})

test('the approver sees which path a command deletes when the path was assigned to a credential-named variable', async (t) => {
  const { g } = await startProbeGateway(t)
  const command = 'password=/srv/important-data; rm -rf "$password"'
  const { requested } = await askAndDeny(g, command)
  assert.deepEqual(display(requested), [{ name: 'command', value: command }])
})

test('the approver sees a credential assigned in a command as a reference, every word around it shown, and the log never has it', async (t) => {
  const logs = captureLogs('info')
  const { g } = await startProbeGateway(t, {}, { logger: logs.logger })
  const { turnId, requested } = await askAndDeny(g, 'password=Xk9mQ2pL7vR4tW8s; mysql -p"$password" shop')
  assert.deepEqual(display(requested), [{ name: 'command', value: 'password=‹••••›; mysql -p"$password" shop' }])
  const turn = await g.http('GET', `/v1/turns/${turnId}`)
  assert.ok(!JSON.stringify(turn.body).includes('Xk9mQ2pL7vR4tW8s'), 'the turn record has it masked')
  assert.ok(!logs.text().includes('Xk9mQ2pL7vR4tW8s'), 'no log line has it')
})
