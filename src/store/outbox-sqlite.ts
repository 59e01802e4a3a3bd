/**
 * The outbox in the SQLite database. `write` runs inside the store's event transactions (it is
 * synchronous, like them), so a delivery is on disk exactly when the event it announces is.
 */
import type Database from 'better-sqlite3'
import type { AttemptOutcome, DeliveryFilter, DeliveryRecord, DeliveryStatus, Outbox, OutboxDelivery, OutboxWrite } from './outbox.js'

const TABLE = `CREATE TABLE IF NOT EXISTS tollgate_outbox (
  id TEXT PRIMARY KEY,
  message_id TEXT NOT NULL,
  webhook TEXT NOT NULL,
  tenant TEXT NOT NULL,
  type TEXT NOT NULL,
  body TEXT NOT NULL,
  created_ms INTEGER NOT NULL,
  due_ms INTEGER NOT NULL,
  give_up_ms INTEGER NOT NULL,
  escalation_of TEXT,
  turn_id TEXT,
  status TEXT NOT NULL,
  attempts INTEGER NOT NULL DEFAULT 0,
  last_attempt_ms INTEGER,
  last_status_code INTEGER,
  last_error TEXT,
  leased_by TEXT,
  lease_until_ms INTEGER NOT NULL DEFAULT 0
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS tollgate_outbox_due ON tollgate_outbox (due_ms) WHERE status = 'pending';
CREATE INDEX IF NOT EXISTS tollgate_outbox_by_tenant ON tollgate_outbox (tenant, created_ms DESC);`

const COLUMNS = `id, message_id, webhook, tenant, type, body, created_ms, due_ms, give_up_ms, escalation_of, turn_id, status, attempts,
  last_attempt_ms, last_status_code, last_error`

function insertValues (d: OutboxDelivery): unknown[] {
  return [d.id, d.message_id, d.webhook, d.tenant, d.type, d.body, d.created_ms, d.due_ms, d.give_up_ms, d.escalation_of, d.turn_id]
}

export class SqliteOutbox implements Outbox {
  /** Synchronous: for the store's own transactions. */
  readonly write: (write: OutboxWrite) => void
  private readonly addTx: (write: OutboxWrite) => void
  private readonly claimTx: (instanceId: string, now: number, leaseMs: number, limit: number) => DeliveryRecord[]
  private readonly settleOk: Database.Statement
  private readonly settleFailed: Database.Statement
  private readonly listAll: Database.Statement<[string, number], DeliveryRecord>
  private readonly listStatus: Database.Statement<[string, string, number], DeliveryRecord>
  private readonly getOne: Database.Statement<[string, string], DeliveryRecord>
  private readonly retryOne: Database.Statement
  private readonly release: Database.Statement

  constructor (db: Database.Database) {
    db.exec(TABLE)
    const insert = db.prepare(`INSERT OR IGNORE INTO tollgate_outbox
      (id, message_id, webhook, tenant, type, body, created_ms, due_ms, give_up_ms, escalation_of, turn_id, status)
      VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'pending')`)
    const cancelOfRequest = db.prepare(`UPDATE tollgate_outbox SET status = 'cancelled'
      WHERE status = 'pending' AND escalation_of = ?`)
    const cancelOfTurn = db.prepare(`UPDATE tollgate_outbox SET status = 'cancelled'
      WHERE status = 'pending' AND escalation_of IS NOT NULL AND turn_id = ?`)
    this.write = (write) => {
      for (const d of write.deliveries) insert.run(...insertValues(d))
      for (const r of write.cancelEscalationsOf) cancelOfRequest.run(r)
      for (const t of write.cancelEscalationsOfTurns) cancelOfTurn.run(t)
    }
    this.addTx = db.transaction(this.write)
    const due = db.prepare<[number, number, number], { id: string }>(`SELECT id FROM tollgate_outbox
      WHERE status = 'pending' AND due_ms <= ? AND lease_until_ms <= ? ORDER BY due_ms LIMIT ?`)
    const lease = db.prepare<[string, number, string], DeliveryRecord>(`UPDATE tollgate_outbox SET leased_by = ?, lease_until_ms = ?
      WHERE id = ? RETURNING ${COLUMNS}`)
    this.claimTx = db.transaction((instanceId: string, now: number, leaseMs: number, limit: number) =>
      due.all(now, now, limit).map((r) => lease.get(instanceId, now + leaseMs, r.id) as DeliveryRecord))
    this.settleOk = db.prepare(`UPDATE tollgate_outbox SET status = 'delivered', attempts = attempts + 1, last_attempt_ms = ?,
      last_status_code = ?, last_error = NULL, leased_by = NULL, lease_until_ms = 0
      WHERE id = ? AND leased_by = ? AND status = 'pending'`)
    // A null retry time gives the delivery up: it is listed as failed (the dead letters).
    this.settleFailed = db.prepare(`UPDATE tollgate_outbox SET attempts = attempts + 1, last_attempt_ms = @at, last_status_code = @code,
      last_error = @error, status = CASE WHEN @retry IS NULL THEN 'failed' ELSE 'pending' END, due_ms = coalesce(@retry, due_ms),
      leased_by = NULL, lease_until_ms = 0
      WHERE id = @id AND leased_by = @by AND status = 'pending'`)
    this.listAll = db.prepare(`SELECT ${COLUMNS} FROM tollgate_outbox WHERE tenant = ? ORDER BY created_ms DESC, id DESC LIMIT ?`)
    this.listStatus = db.prepare(`SELECT ${COLUMNS} FROM tollgate_outbox WHERE tenant = ? AND status = ?
      ORDER BY created_ms DESC, id DESC LIMIT ?`)
    this.getOne = db.prepare(`SELECT ${COLUMNS} FROM tollgate_outbox WHERE tenant = ? AND id = ?`)
    this.release = db.prepare('UPDATE tollgate_outbox SET leased_by = NULL, lease_until_ms = 0 WHERE leased_by IS NOT NULL')
    this.retryOne = db.prepare(`UPDATE tollgate_outbox SET status = 'pending', due_ms = ?, give_up_ms = ?
      WHERE tenant = ? AND id = ? AND status = 'failed'`)
  }

  async add (write: OutboxWrite): Promise<void> {
    this.addTx(write)
  }

  async claim (instanceId: string, nowMs: number, leaseMs: number, limit: number): Promise<DeliveryRecord[]> {
    return this.claimTx(instanceId, nowMs, leaseMs, limit)
  }

  async releaseLeases (): Promise<void> {
    this.release.run()
  }

  async settle (id: string, instanceId: string, outcome: AttemptOutcome): Promise<void> {
    if (outcome.ok) this.settleOk.run(outcome.atMs, outcome.statusCode, id, instanceId)
    else {
      const { atMs: at, statusCode: code, error, retryAtMs: retry } = outcome
      this.settleFailed.run({ at, code, error, retry, id, by: instanceId })
    }
  }

  async list (filter: DeliveryFilter, limit: number): Promise<DeliveryRecord[]> {
    return filter.status === undefined
      ? this.listAll.all(filter.tenant, limit)
      : this.listStatus.all(filter.tenant, filter.status satisfies DeliveryStatus, limit)
  }

  async get (tenant: string, id: string): Promise<DeliveryRecord | null> {
    return this.getOne.get(tenant, id) ?? null
  }

  async retry (tenant: string, id: string, nowMs: number, giveUpMs: number): Promise<boolean> {
    return this.retryOne.run(nowMs, giveUpMs, tenant, id).changes === 1
  }
}
