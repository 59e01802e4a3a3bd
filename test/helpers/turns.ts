/**
 * Small HTTP-side helpers for integration tests: start a turn, wait for it to finish, read its
 * event log, and hold a scripted provider reply until the test lets it go.
 */
import assert from 'node:assert/strict'
import type { EventEnvelope } from '../../schemas/events.js'
import { eventually } from './eventually.js'
import type { TestGateway } from './gateway.js'

export interface Gate {
  promise: Promise<void>
  open (): void
}

/** A promise the test resolves by hand; pass `promise` as a scripted reply's `gate`. */
export function gate (): Gate {
  let open!: () => void
  const promise = new Promise<void>((resolve) => { open = resolve })
  return { promise, open }
}

/** POST /v1/turns that must be accepted; returns the 202 body. */
export async function startTurn (
  g: TestGateway, body: Record<string, unknown>
): Promise<{ turn_id: string, session_id: string, status: string, events_url: string }> {
  const res = await g.http('POST', '/v1/turns', body)
  assert.equal(res.status, 202, `POST /v1/turns answered ${res.status}: ${JSON.stringify(res.body)}`)
  return res.body
}

/** Polls GET /v1/turns/:id until the turn is no longer running and returns the turn JSON. */
export async function finishedTurn (g: TestGateway, turnId: string, timeoutMs = 30_000): Promise<any> {
  let turn: any
  await eventually(async () => {
    const res = await g.http('GET', `/v1/turns/${turnId}`)
    assert.equal(res.status, 200)
    turn = res.body
    return turn.status !== 'running'
  }, { what: `turn ${turnId} to finish`, timeoutMs })
  return turn
}

/** The turn's whole event log over HTTP. */
export async function turnEvents (g: TestGateway, turnId: string, afterSeq = 0): Promise<EventEnvelope[]> {
  const res = await g.http('GET', `/v1/turns/${turnId}/events?after_seq=${afterSeq}`)
  assert.equal(res.status, 200, JSON.stringify(res.body))
  return res.body.events
}

/** Starts a turn over HTTP, waits for it to end and returns its record and full event log. */
export async function runTurn (g: TestGateway, body: Record<string, unknown>): Promise<{ turn: any, events: EventEnvelope[] }> {
  const { turn_id: turnId } = await startTurn(g, body)
  const turn = await finishedTurn(g, turnId)
  return { turn, events: await turnEvents(g, turnId) }
}
