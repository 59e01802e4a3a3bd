/**
 * Steering from the terminal client in a real terminal (tmux): a line typed while a turn runs is
 * sent to that turn, shown as a steering message, and read by the model at its next call.
 */
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { fileURLToPath } from 'node:url'
import { startGateway } from '../helpers/gateway.js'
import { startInTmux } from '../helpers/tmux.js'
import { gate } from '../helpers/turns.js'
import { eventually } from '../helpers/eventually.js'

const ROOT = fileURLToPath(new URL('../..', import.meta.url))

test('in tmux, a line typed while the turn runs steers it: the model reads it next and the turn runs one more iteration', async (t) => {
  const g = await startGateway()
  const term = await startInTmux([process.execPath, 'bin/tollgate.js', 'chat', '--url', g.url], ROOT)
  t.after(async () => {
    await term.close()
    await g.close()
  })
  await term.waitFor(/connected to http:\/\/127\.0\.0\.1:\d+\. Type a message/)
  const held = gate()
  g.provider.enqueue({ text: 'A long story.', gate: held.promise }, { text: 'Short.' })
  await term.typeLine('tell me a story')
  await eventually(() => g.provider.open() === 1, { what: 'the model call' })
  await term.typeLine('keep it short')
  await term.waitFor(/» keep it short \(joins before the next model call\)/)
  held.open()
  await term.waitFor(/✓ completed/)
  const turns = (await g.http('GET', '/v1/turns')).body.items
  assert.equal(turns.length, 1, 'the line started no turn of its own')
  assert.equal(g.provider.requests.length, 2)
  assert.deepEqual(g.provider.requests[1]?.body.messages.slice(-3).map((m) => m.content), ['tell me a story', 'A long story.', 'keep it short'])
})
