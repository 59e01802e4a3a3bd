/**
 * The notification outbox: deliveries of messages to webhooks, written in the same transaction as
 * the event each announces (decision 0263), then claimed, tried and settled by a dispatcher. The
 * store never decides what an event announces: it is handed a pure planner at creation and writes
 * what the planner returns beside the event. Ids are derived from the event, so an event written
 * twice (a retried append) plans the same rows, and the second write changes nothing.
 */
import type { BusEnvelope } from '../core/envelope.js'

export type DeliveryStatus = 'pending' | 'delivered' | 'failed' | 'cancelled'

/** One message on its way to one webhook. */
export interface OutboxDelivery {
  /** Derived from the message and the webhook: stable, so a repeated plan inserts nothing. */
  id: string
  /** The `webhook-id` header: the same on every attempt. */
  message_id: string
  webhook: string
  tenant: string
  type: string
  /** The exact body POSTed, `{type, timestamp, data}` as JSON: signed as is on every attempt. */
  body: string
  created_ms: number
  /** Not tried before this time (an escalation's is in the future). */
  due_ms: number
  /** Given up (status failed) when an attempt fails after this time. */
  give_up_ms: number
  /** Set on an escalation: the approval request whose answer cancels it. */
  escalation_of: string | null
  /** The turn it is about, if any: a finished turn cancels its pending escalations. */
  turn_id: string | null
}

/** A delivery as the log lists it: what it is and how its attempts went. */
export interface DeliveryRecord extends OutboxDelivery {
  status: DeliveryStatus
  attempts: number
  last_attempt_ms: number | null
  last_status_code: number | null
  last_error: string | null
}

/** What an event, or an announcement, adds to the outbox. */
export interface OutboxWrite {
  deliveries: OutboxDelivery[]
  /** Approval requests answered: their pending escalations are cancelled. */
  cancelEscalationsOf: string[]
  /** Turns that finished: their pending escalations are cancelled. */
  cancelEscalationsOfTurns: string[]
}

export const NOTHING: OutboxWrite = Object.freeze({ deliveries: [], cancelEscalationsOf: [], cancelEscalationsOfTurns: [] }) as OutboxWrite

/** Maps a stored event to what it announces; pure and synchronous, it runs inside the store's write. */
export type OutboxPlanner = (event: BusEnvelope) => OutboxWrite

/** The outcome of one attempt, as the dispatcher reports it. */
export type AttemptOutcome =
  | { ok: true, statusCode: number, atMs: number }
  /** `retryAtMs` null: no further attempt (given up, or refused for good). */
  | { ok: false, statusCode: number | null, error: string, atMs: number, retryAtMs: number | null }

export interface DeliveryFilter {
  tenant: string
  status?: DeliveryStatus
}

export interface Outbox {
  /** Writes deliveries that no event carries (a notifier's announcement). */
  add (write: OutboxWrite): Promise<void>
  /**
   * Claims up to `limit` due pending deliveries for `instanceId` until `nowMs + leaseMs`: only
   * deliveries no unexpired lease holds, so two instances never claim one at the same time.
   */
  claim (instanceId: string, nowMs: number, leaseMs: number, limit: number): Promise<DeliveryRecord[]>
  /**
   * Ends every lease: for an exclusive store at start, whose leases all belong to dead processes
   * (a delivery that was in flight when the process died is tried again now, not after its lease).
   */
  releaseLeases (): Promise<void>
  /** Records an attempt of a claimed delivery and releases its lease; ignored once the lease is someone else's. */
  settle (id: string, instanceId: string, outcome: AttemptOutcome): Promise<void>
  /** The tenant's deliveries, newest first. */
  list (filter: DeliveryFilter, limit: number): Promise<DeliveryRecord[]>
  get (tenant: string, id: string): Promise<DeliveryRecord | null>
  /** A failed delivery of the tenant made pending again, due now, tried until `giveUpMs`; false if it is not failed. */
  retry (tenant: string, id: string, nowMs: number, giveUpMs: number): Promise<boolean>
}

/** Applies an outcome to a record (the memory outbox; the SQL ones do the same in their statements). */
export function applyOutcome (record: DeliveryRecord, outcome: AttemptOutcome): void {
  record.attempts += 1
  record.last_attempt_ms = outcome.atMs
  record.last_status_code = outcome.statusCode
  if (outcome.ok) {
    record.status = 'delivered'
    record.last_error = null
    return
  }
  record.last_error = outcome.error
  if (outcome.retryAtMs === null) record.status = 'failed'
  else record.due_ms = outcome.retryAtMs
}
