/**
 * The outbox of the memory store: gone with the process, like everything else it keeps. The memory
 * store keeps no event log, so nothing plans deliveries into it (notifications need SQLite or
 * PostgreSQL); it answers the delivery routes, empty.
 */
import {
  applyOutcome, type AttemptOutcome, type DeliveryFilter, type DeliveryRecord, type Outbox, type OutboxWrite
} from './outbox.js'

interface Held {
  record: DeliveryRecord
  leasedBy: string | null
  leaseUntil: number
}

export class MemoryOutbox implements Outbox {
  private readonly rows = new Map<string, Held>()

  private write (write: OutboxWrite): void {
    for (const d of write.deliveries) {
      if (this.rows.has(d.id)) continue
      this.rows.set(d.id, {
        record: { ...d, status: 'pending', attempts: 0, last_attempt_ms: null, last_status_code: null, last_error: null },
        leasedBy: null,
        leaseUntil: 0
      })
    }
    const requests = new Set(write.cancelEscalationsOf)
    const turns = new Set(write.cancelEscalationsOfTurns)
    if (requests.size === 0 && turns.size === 0) return
    for (const { record } of this.rows.values()) {
      if (record.status !== 'pending' || record.escalation_of === null) continue
      if (requests.has(record.escalation_of) || (record.turn_id !== null && turns.has(record.turn_id))) record.status = 'cancelled'
    }
  }

  async add (write: OutboxWrite): Promise<void> {
    this.write(write)
  }

  async claim (instanceId: string, nowMs: number, leaseMs: number, limit: number): Promise<DeliveryRecord[]> {
    const due = [...this.rows.values()]
      .filter((h) => h.record.status === 'pending' && h.record.due_ms <= nowMs && h.leaseUntil <= nowMs)
      .sort((a, b) => a.record.due_ms - b.record.due_ms)
      .slice(0, limit)
    for (const h of due) {
      h.leasedBy = instanceId
      h.leaseUntil = nowMs + leaseMs
    }
    return due.map((h) => ({ ...h.record }))
  }

  async releaseLeases (): Promise<void> {
    for (const held of this.rows.values()) {
      held.leasedBy = null
      held.leaseUntil = 0
    }
  }

  async settle (id: string, instanceId: string, outcome: AttemptOutcome): Promise<void> {
    const held = this.rows.get(id)
    if (held === undefined || held.leasedBy !== instanceId || held.record.status !== 'pending') return
    applyOutcome(held.record, outcome)
    held.leasedBy = null
    held.leaseUntil = 0
  }

  async list (filter: DeliveryFilter, limit: number): Promise<DeliveryRecord[]> {
    return [...this.rows.values()].map((h) => h.record)
      .filter((r) => r.tenant === filter.tenant && (filter.status === undefined || r.status === filter.status))
      .sort((a, b) => b.created_ms - a.created_ms || (a.id < b.id ? 1 : -1))
      .slice(0, limit)
      .map((r) => ({ ...r }))
  }

  async get (tenant: string, id: string): Promise<DeliveryRecord | null> {
    const held = this.rows.get(id)
    return held === undefined || held.record.tenant !== tenant ? null : { ...held.record }
  }

  async retry (tenant: string, id: string, nowMs: number, giveUpMs: number): Promise<boolean> {
    const held = this.rows.get(id)
    if (held === undefined || held.record.tenant !== tenant || held.record.status !== 'failed') return false
    Object.assign(held.record, { status: 'pending', due_ms: nowMs, give_up_ms: giveUpMs })
    return true
  }
}
