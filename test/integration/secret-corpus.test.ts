/**
 * The secret corpus through a real turn: a shell call prints it, and every surface a person or a
 * machine reads must show it masked and the near-misses unchanged, while the model gets it raw.
 */
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { startGateway } from '../helpers/gateway.js'
import { captureLogs } from '../helpers/log-capture.js'
import { corpusText, leakedSecrets, NEAR_MISSES, secretCorpus } from '../helpers/secret-corpus.js'
import { turnEvents } from '../helpers/turns.js'

const corpus = secretCorpus()
const text = corpusText(corpus)

function assertSurface (where: string, shown: string): void {
  assert.deepEqual(leakedSecrets(corpus, shown), [], `${where} leaks`)
  for (const nearMiss of NEAR_MISSES) {
    for (const line of nearMiss.text.split('\n')) {
      assert.ok(shown.includes(JSON.stringify(line).slice(1, -1)), `${where} changed the near-miss "${nearMiss.name}"`)
    }
  }
}

test('the secret corpus in a tool output is masked on every surface and the near-misses come through unchanged', async (t) => {
  const logs = captureLogs('info')
  const g = await startGateway({
    overrides: {
      log: { level: 'info', max_field_chars: 1_000_000 },
      agents: { default: { tools: ['shell'] } },
      risk_profiles: { default: { level: 'full' } }
    },
    logger: logs.logger
  })
  t.after(async () => { await g.close() })
  await writeFile(join(g.workspace, 'corpus.txt'), text)
  g.provider.enqueue({ toolCalls: [{ id: 'c1', name: 'shell', arguments: { command: 'cat corpus.txt' } }] }, { text: 'printed it' })

  const ws = await g.socket()
  const accepted = await ws.request({ type: 'turn.start', message: 'print the file', session_id: 'corpus-session' })
  const live = await ws.waitForTerminal(accepted.turn_id)
  const turnId = accepted.turn_id as string

  const toolMessage = g.provider.requests[1]?.body.messages.at(-1)
  assert.equal(toolMessage?.content, text, 'the model gets the output raw')
  const result = live.find((e) => e.event.kind === 'tool_result')?.event
  assert.ok(result?.kind === 'tool_result' && result.status === 'ok' && result.truncated !== true, 'the whole output was streamed')

  assertSurface('WebSocket events', JSON.stringify(live))
  assertSurface('GET /v1/turns/:id', JSON.stringify((await g.http('GET', `/v1/turns/${turnId}`)).body))
  assertSurface('GET /v1/turns/:id/events', JSON.stringify(await turnEvents(g, turnId)))
  assertSurface('GET /v1/sessions/:id', JSON.stringify((await g.http('GET', '/v1/sessions/corpus-session')).body))
  const toolLine = logs.lines().find((l) => l.event === 'tool_call')
  assert.ok(toolLine !== undefined, 'the tool call was logged with its result')
  assertSurface('the log', logs.text())
})

test('the secret corpus printed line by line by a long-running command is masked in every tool.progress message', async (t) => {
  const g = await startGateway({
    overrides: {
      agents: { default: { tools: ['shell'] } },
      risk_profiles: { default: { level: 'full' } },
      tools: { shell: { progress_after_ms: 0, require_approval_for_medium_risk: false } },
      turns: { tool_progress: { max_events_per_second: 100, max_events_per_call: 10_000, max_message_bytes: 4096 } }
    }
  })
  t.after(async () => { await g.close() })
  await writeFile(join(g.workspace, 'corpus.txt'), text)
  // One line every 20 ms: under the rate limit, so every line is a progress message.
  const command = 'while IFS= read -r line || [ -n "$line" ]; do printf "%s\\n" "$line"; sleep 0.02; done < corpus.txt; sleep 0.1'
  g.provider.enqueue({ toolCalls: [{ id: 'c1', name: 'shell', arguments: { command } }] }, { text: 'printed it' })

  const ws = await g.socket()
  const accepted = await ws.request({ type: 'turn.start', message: 'print the file slowly' })
  const live = await ws.waitForTerminal(accepted.turn_id, 60_000)
  const messages = live.flatMap((e) => (e.event.kind === 'tool.progress' ? [e.event.message ?? ''] : []))
  assert.ok(messages.length > 20, `the lines came as progress (${messages.length})`)
  assertSurface('tool.progress messages', JSON.stringify(messages.join('\n')))
})
