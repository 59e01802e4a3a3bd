/**
 * The terminal client in a real terminal (tmux) against the real gateway: an answer key typed
 * after its question was withdrawn is swallowed with a notice saying why, and the gateway's own
 * state shows that it started no turn and answered nothing.
 */
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { fileURLToPath } from 'node:url'
import { startGateway, type TestGateway } from '../helpers/gateway.js'
import { startInTmux, type TmuxTerminal } from '../helpers/tmux.js'
import { createProbes, probeOverrides } from '../helpers/tools.js'

const ROOT = fileURLToPath(new URL('../..', import.meta.url))
/** Long enough that a test's keys land inside it even on a loaded machine. */
const GUARD_MS = 3000

interface Setup { g: TestGateway, term: TmuxTerminal }

async function setup (t: { after: (fn: () => Promise<void>) => void }, approvalTimeoutMs = 120_000): Promise<Setup> {
  const probes = createProbes()
  const g = await startGateway({ tools: probes.tools, overrides: probeOverrides({ turns: { approval_timeout_ms: approvalTimeoutMs } }) })
  const term = await startInTmux([process.execPath, 'bin/tollgate.js', 'chat', '--url', g.url, '--answer-guard-ms', String(GUARD_MS)], ROOT)
  t.after(async () => {
    await term.close()
    await g.close()
  })
  await term.waitFor(/connected to http:\/\/127\.0\.0\.1:\d+\. Type a message/)
  return { g, term }
}

async function sessionOf (term: TmuxTerminal): Promise<{ turnId: string, sessionId: string }> {
  const [, turnId, sessionId] = await term.waitFor(/── turn (turn_\S+) \(agent default, session (ses_[^)\s]+)\)/)
  return { turnId: turnId ?? '', sessionId: sessionId ?? '' }
}

test('in tmux, an n typed just after the question expired is swallowed with "expired", starts no turn and answers nothing', async (t) => {
  const { g, term } = await setup(t, 1500)
  g.provider.enqueue({ toolCalls: [{ id: 'a', name: 'risky', arguments: { label: 'too-late' } }] }, { text: 'understood, not run' })
  await term.typeLine('please run risky')
  const { turnId, sessionId } = await sessionOf(term)
  await term.waitFor(/allow\? \[y\]es \/ \[n\]o \/ \[a\]lways \/ \[e\]dit:/)
  await term.waitFor(/\(withdrawn: it expired unanswered \(the call was denied\); not asking any more\)/)
  await term.typeLine('n')
  await term.waitFor(new RegExp('\\(ignored "n": the question about risky was withdrawn a moment before, ' +
    'because it expired unanswered \\(the call was denied\\); nothing was sent\\)'))
  await term.waitFor(/✓ completed/)

  // After the guard window the first answer-shaped line is still held back, once.
  // fixed wait: the client's answer guard is a span of time, the behaviour under test.
  await new Promise((resolve) => setTimeout(resolve, GUARD_MS))
  await term.typeLine('a')
  await term.waitFor(/\(not sent: "a" looks like an answer to the question about risky, which was withdrawn because it expired unanswered/)

  const turn = (await g.http('GET', `/v1/turns/${turnId}`)).body
  assert.equal(turn.status, 'completed')
  assert.deepEqual(turn.approvals.map((a: { decision: string }) => a.decision), ['expired'], 'the late n answered nothing')
  assert.deepEqual(turn.tool_calls.map((c: { status: string }) => c.status), ['denied'])
  const session = (await g.http('GET', `/v1/sessions/${sessionId}`)).body
  assert.deepEqual(session.turn_ids, [turnId], 'no keypress started a turn')
  assert.deepEqual(session.always_allowed_tools, [], 'the stray a granted nothing')
  assert.equal(g.provider.requests.length, 2, 'the model was called for the one turn only')
})

test('in tmux, a y typed just after the turn was cancelled is swallowed with "turn was cancelled" and answers nothing', async (t) => {
  const { g, term } = await setup(t)
  g.provider.enqueue({ toolCalls: [{ id: 'a', name: 'risky', arguments: { label: 'cancel-me' } }] })
  await term.typeLine('run risky then get cancelled')
  const { turnId, sessionId } = await sessionOf(term)
  await term.waitFor(/allow\? \[y\]es/)
  assert.equal((await g.http('DELETE', `/v1/turns/${turnId}`)).status, 200)
  await term.waitFor(/\(withdrawn: the turn was cancelled; not asking any more\)/)
  await term.typeLine('y')
  await term.waitFor(/\(ignored "y": the question about risky was withdrawn a moment before, because the turn was cancelled; nothing/)

  const turn = (await g.http('GET', `/v1/turns/${turnId}`)).body
  assert.equal(turn.status, 'cancelled')
  assert.deepEqual(turn.approvals.map((a: { decision: string }) => a.decision), ['cancelled'])
  assert.deepEqual((await g.http('GET', `/v1/sessions/${sessionId}`)).body.turn_ids, [turnId], 'the y started no turn')
})

test('in tmux, a key typed before a new question was on screen long enough does not answer it; a later one does', async (t) => {
  const { g, term } = await setup(t)
  g.provider.enqueue(
    {
      text: 'Thinking about it for a moment before I ask. ',
      chunkDelayMs: 200,
      toolCalls: [{ id: 'a', name: 'risky', arguments: { label: 'typed-ahead' } }]
    },
    { text: 'fine, not run' }
  )
  await term.typeLine('ask me something')
  const { turnId } = await sessionOf(term)
  // Typed while the model is still talking, before the question exists.
  await term.typeLine('y')
  await term.waitFor(/\(ignored "y": it was typed before this question had been on screen for 3000 ms; read it, then answer\)/)
  // fixed wait: the client's answer guard is a span of time, the behaviour under test.
  await new Promise((resolve) => setTimeout(resolve, GUARD_MS))
  await term.typeLine('n')
  await term.waitFor(/→ no \(ws:/)
  await term.waitFor(/✓ completed/)
  const turn = (await g.http('GET', `/v1/turns/${turnId}`)).body
  assert.deepEqual(turn.approvals.map((a: { decision: string }) => a.decision), ['no'], 'only the answer typed after the guard counted')
  assert.deepEqual(turn.tool_calls.map((c: { status: string }) => c.status), ['denied'])
})
