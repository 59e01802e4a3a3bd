/**
 * The running turn's phases (src/service/running-turn.ts): each entered by one method, a change
 * its own code never asks for refused. Parking and resuming end to end: test/integration/shutdown.test.ts
 * and the durable-* tests.
 */
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { loadConfig } from '../../src/core/config.js'
import { TollgateError } from '../../src/core/errors.js'
import { ConnectionRegistry } from '../../src/service/connections.js'
import { IllegalTurnTransition, RunningTurn, type TurnHost } from '../../src/service/running-turn.js'
import type { TurnRecord } from '../../src/store/store.js'
import { realTimers } from '../helpers/timers.js'

/** Phase changes touch neither the store nor the journal: any use of them fails the test. */
const untouched = new Proxy({}, { get: () => { throw new Error('not used by phase changes') } }) as never

function turn (): RunningTurn {
  const host: TurnHost = {
    config: loadConfig({ env: {} }),
    store: untouched,
    journal: untouched,
    connections: new ConnectionRegistry(),
    ...realTimers
  }
  const at = new Date().toISOString()
  const record: TurnRecord = {
    turn_id: 'turn_1', session_id: 'ses_1', agent: 'default', owner: 'local/local', status: 'running', created_at: at, updated_at: at,
    iterations: 0, tool_calls: [], approvals: [], pending_approvals: [], last_seq: 0
  }
  return new RunningTurn(host, record, { ownerConnection: null, detach: false })
}

test('a turn starts in starting, begin() makes it running, and a stop parks it through parking', () => {
  const running = turn()
  assert.equal(running.phase, 'starting')
  running.begin()
  assert.equal(running.phase, 'running')
  running.requestPark()
  assert.equal(running.phase, 'parking')
  assert.equal(running.parkRequested, true)
  running.park()
  assert.equal(running.phase, 'parked')
  assert.equal(running.parkRequested, true)
})

test('a stop asked before the loop began stands: begin() leaves the turn parking', () => {
  const running = turn()
  running.requestPark()
  running.begin()
  assert.equal(running.phase, 'parking')
})

test('parking a turn no stop asked to park is refused as an illegal transition', () => {
  const running = turn()
  running.begin()
  assert.throws(() => { running.park() }, IllegalTurnTransition)
  assert.equal(running.phase, 'running')
})

test('a parked turn refuses steering with SHUTTING_DOWN', async () => {
  const running = turn()
  running.requestPark()
  running.park()
  await assert.rejects(running.steer('also this', 'local/local'), (err: unknown) => err instanceof TollgateError && err.code === 'SHUTTING_DOWN')
})

test('a turn without a park probe is always at a safe point; a durable turn sets its probe once', () => {
  const running = turn()
  assert.equal(running.atSafePoint, true)
  running.parksWhen(() => false)
  assert.equal(running.atSafePoint, false)
  assert.throws(() => { running.parksWhen(() => true) })
})

test('a turn holds its cluster-wide slot (renewed by its instance) while it starts, runs and parks, and not once parked', () => {
  const running = turn()
  const held: boolean[] = [running.holdsSlot]
  running.begin()
  held.push(running.holdsSlot)
  running.requestPark()
  held.push(running.holdsSlot)
  running.park()
  held.push(running.holdsSlot)
  assert.deepEqual(held, [true, true, true, false])
})
