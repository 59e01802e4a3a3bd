/**
 * TurnOwnership alone: who owns a running turn, and what the owner connection closing does to it.
 * The disconnect grace with a successor is covered end to end (test/integration/cancellation.test.ts).
 */
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { ConnectionRegistry } from '../../src/service/connections.js'
import { TurnOwnership, type OwnershipHost } from '../../src/service/turn-ownership.js'
import type { TurnRecord } from '../../src/store/store.js'
import { realTimers } from '../helpers/timers.js'

function record (): TurnRecord {
  const at = new Date().toISOString()
  return {
    turn_id: 'turn_1', session_id: 'ses_1', agent: 'default', owner: 'acme/alice', status: 'running', created_at: at, updated_at: at,
    iterations: 0, tool_calls: [], approvals: [], pending_approvals: [], last_seq: 0
  }
}

function owned (detached = false): { connections: ConnectionRegistry, ownership: TurnOwnership, cancels: string[], owner: string } {
  const connections = new ConnectionRegistry()
  const host: OwnershipHost = {
    connections,
    ...realTimers
  }
  const cancels: string[] = []
  const owner = connections.open('ws', 'acme/alice', true).id
  const ownership = new TurnOwnership(host, { record: record(), graceMs: 0, cancel: (reason) => { cancels.push(reason) } }, owner, detached)
  ownership.bind()
  return { connections, ownership, cancels, owner }
}

test('closing the owner connection cancels the turn at once when the disconnect grace is 0', () => {
  const { connections, cancels, owner } = owned()
  connections.close(owner)
  assert.deepEqual(cancels, ['owner connection closed'])
})

test('a detached turn survives its owner connection closing', () => {
  const { connections, ownership, cancels, owner } = owned(true)
  connections.close(owner)
  assert.deepEqual(cancels, [])
  assert.equal(ownership.detached, true)
})

test('a connection that handed the turn over no longer cancels it; the new owner does', () => {
  const { connections, ownership, cancels, owner } = owned()
  const next = connections.open('ws', 'acme/alice', true).id
  ownership.handOver(next)
  connections.close(owner)
  assert.deepEqual(cancels, [])
  assert.equal(ownership.connection, next)
  connections.close(next)
  assert.deepEqual(cancels, ['owner connection closed'])
})

test('a turn handed back to a connection it left is cancelled once when that connection closes', () => {
  const { connections, ownership, cancels, owner } = owned()
  ownership.handOver(connections.open('ws', 'acme/alice', true).id)
  ownership.handOver(owner)
  connections.close(owner)
  assert.deepEqual(cancels, ['owner connection closed'])
})

test('a turn handed to no connection runs on unowned', () => {
  const { connections, ownership, cancels, owner } = owned()
  ownership.handOver(null)
  connections.close(owner)
  assert.deepEqual(cancels, [])
  assert.equal(ownership.connection, null)
})

test('after a restart a turn runs detached, with no owner', () => {
  const { ownership } = owned()
  ownership.ownAfterRestart(true)
  assert.equal(ownership.connection, null)
  assert.equal(ownership.detached, true)
  ownership.dispose()
})

test('a disposed ownership no longer cancels the turn when its owner connection closes', () => {
  const { connections, ownership, cancels, owner } = owned()
  ownership.dispose()
  connections.close(owner)
  assert.deepEqual(cancels, [])
})
