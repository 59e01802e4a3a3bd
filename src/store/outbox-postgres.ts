/**
 * The outbox in PostgreSQL, shared by every instance. A claim takes due rows with `FOR UPDATE SKIP
 * LOCKED` and leases them in the same statement, so two instances polling together never claim
 * one delivery; a lease that runs out (its claimer died) makes the row claimable again. Times are
 * each instance's clock (`Date.now()`): leases are long beside any clock skew a cluster tolerates.
 */
import type pg from 'pg'
import { inTransaction } from './pg-transaction.js'
import type { AttemptOutcome, DeliveryFilter, DeliveryRecord, Outbox, OutboxWrite } from './outbox.js'

/** The outbox's table; `s` is the quoted schema name. */
export function outboxDdl (s: string): string {
  return `CREATE TABLE IF NOT EXISTS ${s}.tollgate_outbox (
  id TEXT PRIMARY KEY,
  message_id TEXT NOT NULL,
  webhook TEXT NOT NULL,
  tenant TEXT NOT NULL,
  type TEXT NOT NULL,
  body TEXT NOT NULL,
  created_ms BIGINT NOT NULL,
  due_ms BIGINT NOT NULL,
  give_up_ms BIGINT NOT NULL,
  escalation_of TEXT,
  turn_id TEXT,
  status TEXT NOT NULL,
  attempts INTEGER NOT NULL DEFAULT 0,
  last_attempt_ms BIGINT,
  last_status_code INTEGER,
  last_error TEXT,
  leased_by TEXT,
  lease_until_ms BIGINT NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS tollgate_outbox_due ON ${s}.tollgate_outbox (due_ms) WHERE status = 'pending';
CREATE INDEX IF NOT EXISTS tollgate_outbox_by_tenant ON ${s}.tollgate_outbox (tenant, created_ms DESC);`
}

const COLUMNS = `id, message_id, webhook, tenant, type, body, created_ms, due_ms, give_up_ms, escalation_of, turn_id, status, attempts,
  last_attempt_ms, last_status_code, last_error`

type Row = Omit<DeliveryRecord, 'created_ms' | 'due_ms' | 'give_up_ms' | 'last_attempt_ms'> & {
  created_ms: string, due_ms: string, give_up_ms: string, last_attempt_ms: string | null
}

/** BIGINT columns come back as text. */
function record (row: Row): DeliveryRecord {
  return {
    ...row,
    created_ms: Number(row.created_ms),
    due_ms: Number(row.due_ms),
    give_up_ms: Number(row.give_up_ms),
    last_attempt_ms: row.last_attempt_ms === null ? null : Number(row.last_attempt_ms)
  }
}

export function isEmptyWrite (write: OutboxWrite): boolean {
  return write.deliveries.length === 0 && write.cancelEscalationsOf.length === 0 && write.cancelEscalationsOfTurns.length === 0
}

export class PostgresOutbox implements Outbox {
  constructor (private readonly pool: pg.Pool, private readonly s: string) {}

  /** Writes `write` on `client`, inside the caller's transaction. */
  async writeWith (client: pg.ClientBase, write: OutboxWrite): Promise<void> {
    const d = write.deliveries
    if (d.length > 0) {
      await client.query(`INSERT INTO ${this.s}.tollgate_outbox
        (id, message_id, webhook, tenant, type, body, created_ms, due_ms, give_up_ms, escalation_of, turn_id, status)
        SELECT *, 'pending' FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::bigint[],
          $8::bigint[], $9::bigint[], $10::text[], $11::text[])
        ON CONFLICT (id) DO NOTHING`, [
        d.map((x) => x.id), d.map((x) => x.message_id), d.map((x) => x.webhook), d.map((x) => x.tenant), d.map((x) => x.type),
        d.map((x) => x.body), d.map((x) => x.created_ms), d.map((x) => x.due_ms), d.map((x) => x.give_up_ms),
        d.map((x) => x.escalation_of), d.map((x) => x.turn_id)
      ])
    }
    if (write.cancelEscalationsOf.length > 0 || write.cancelEscalationsOfTurns.length > 0) {
      await client.query(`UPDATE ${this.s}.tollgate_outbox SET status = 'cancelled'
        WHERE status = 'pending' AND escalation_of IS NOT NULL AND (escalation_of = ANY($1::text[]) OR turn_id = ANY($2::text[]))`,
      [write.cancelEscalationsOf, write.cancelEscalationsOfTurns])
    }
  }

  async add (write: OutboxWrite): Promise<void> {
    if (isEmptyWrite(write)) return
    await inTransaction(this.pool, async (client) => { await this.writeWith(client, write) })
  }

  async claim (instanceId: string, nowMs: number, leaseMs: number, limit: number): Promise<DeliveryRecord[]> {
    const { rows } = await this.pool.query<Row>(`UPDATE ${this.s}.tollgate_outbox SET leased_by = $1, lease_until_ms = $2
      WHERE id IN (SELECT id FROM ${this.s}.tollgate_outbox
        WHERE status = 'pending' AND due_ms <= $3 AND lease_until_ms <= $3 ORDER BY due_ms LIMIT $4 FOR UPDATE SKIP LOCKED)
      RETURNING ${COLUMNS}`, [instanceId, nowMs + leaseMs, nowMs, limit])
    return rows.map(record)
  }

  async releaseLeases (): Promise<void> {
    await this.pool.query(`UPDATE ${this.s}.tollgate_outbox SET leased_by = NULL, lease_until_ms = 0 WHERE leased_by IS NOT NULL`)
  }

  async settle (id: string, instanceId: string, outcome: AttemptOutcome): Promise<void> {
    if (outcome.ok) {
      await this.pool.query(`UPDATE ${this.s}.tollgate_outbox SET status = 'delivered', attempts = attempts + 1, last_attempt_ms = $1,
        last_status_code = $2, last_error = NULL, leased_by = NULL, lease_until_ms = 0
        WHERE id = $3 AND leased_by = $4 AND status = 'pending'`, [outcome.atMs, outcome.statusCode, id, instanceId])
      return
    }
    // A null retry time gives the delivery up: it is listed as failed (the dead letters).
    await this.pool.query(`UPDATE ${this.s}.tollgate_outbox SET attempts = attempts + 1, last_attempt_ms = $1, last_status_code = $2,
      last_error = $3, status = CASE WHEN $4::bigint IS NULL THEN 'failed' ELSE 'pending' END, due_ms = coalesce($4::bigint, due_ms),
      leased_by = NULL, lease_until_ms = 0
      WHERE id = $5 AND leased_by = $6 AND status = 'pending'`,
    [outcome.atMs, outcome.statusCode, outcome.error, outcome.retryAtMs, id, instanceId])
  }

  async list (filter: DeliveryFilter, limit: number): Promise<DeliveryRecord[]> {
    const { rows } = await this.pool.query<Row>(`SELECT ${COLUMNS} FROM ${this.s}.tollgate_outbox
      WHERE tenant = $1 AND ($2::text IS NULL OR status = $2) ORDER BY created_ms DESC, id COLLATE "C" DESC LIMIT $3`,
    [filter.tenant, filter.status ?? null, limit])
    return rows.map(record)
  }

  async get (tenant: string, id: string): Promise<DeliveryRecord | null> {
    const { rows } = await this.pool.query<Row>(`SELECT ${COLUMNS} FROM ${this.s}.tollgate_outbox WHERE tenant = $1 AND id = $2`, [tenant, id])
    return rows[0] === undefined ? null : record(rows[0])
  }

  async retry (tenant: string, id: string, nowMs: number, giveUpMs: number): Promise<boolean> {
    const { rowCount } = await this.pool.query(`UPDATE ${this.s}.tollgate_outbox SET status = 'pending', due_ms = $1, give_up_ms = $2
      WHERE tenant = $3 AND id = $4 AND status = 'failed'`, [nowMs, giveUpMs, tenant, id])
    return rowCount === 1
  }
}
