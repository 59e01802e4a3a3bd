/**
 * The audit chain in PostgreSQL. A tenant's appends are serialised across every instance by a
 * transaction-scoped advisory lock on the tenant; the primary key (tenant, seq) would refuse a
 * fork anyway. A trigger refuses every UPDATE and DELETE (append-only).
 */
import pg from 'pg'
import { inTransaction } from './pg-transaction.js'
import { chainEntry, type AuditDraft, type AuditEntry, type AuditLedger } from './audit-chain.js'

const SCHEMA_NAME = /^[a-z_][a-z0-9_]{0,62}$/

function schemaSql (s: string): string {
  return `
CREATE SCHEMA IF NOT EXISTS ${s};
CREATE TABLE IF NOT EXISTS ${s}.tollgate_audit (
  tenant TEXT NOT NULL,
  seq BIGINT NOT NULL,
  ts TEXT NOT NULL,
  kind TEXT NOT NULL,
  data TEXT NOT NULL,
  prev_hash TEXT NOT NULL,
  hash TEXT NOT NULL,
  PRIMARY KEY (tenant, seq)
);
CREATE OR REPLACE FUNCTION ${s}.tollgate_audit_append_only() RETURNS trigger LANGUAGE plpgsql AS
$$ BEGIN RAISE EXCEPTION 'tollgate_audit is append-only'; END $$;
DROP TRIGGER IF EXISTS tollgate_audit_append_only ON ${s}.tollgate_audit;
CREATE TRIGGER tollgate_audit_append_only BEFORE UPDATE OR DELETE ON ${s}.tollgate_audit
FOR EACH ROW EXECUTE FUNCTION ${s}.tollgate_audit_append_only();
`
}

interface Row { tenant: string, seq: string, ts: string, kind: string, data: string, prev_hash: string, hash: string }

export class PostgresAuditLedger implements AuditLedger {
  /** Appends go out one after another, so a tenant's entries are chained in the order they were appended. */
  private tail: Promise<unknown> = Promise.resolve()

  private constructor (private readonly pool: pg.Pool, private readonly s: string) {}

  static async open (options: {
    connectionString: string, schema: string, connectTimeoutMs: number, onIdleError: (err: Error) => void
  }): Promise<PostgresAuditLedger> {
    if (!SCHEMA_NAME.test(options.schema)) throw new Error(`invalid PostgreSQL schema name ${JSON.stringify(options.schema)}`)
    const pool = new pg.Pool({ connectionString: options.connectionString, max: 2, connectionTimeoutMillis: options.connectTimeoutMs })
    pool.on('error', options.onIdleError)
    const s = `"${options.schema}"`
    try {
      await inTransaction(pool, async (client) => {
        // Instances starting together must not race on CREATE: one lock, the same as any other migration would take.
        await client.query("SELECT pg_advisory_xact_lock(hashtext('tollgate_audit_schema'))")
        await client.query(schemaSql(s))
      })
    } catch (err) {
      await pool.end()
      throw err
    }
    return new PostgresAuditLedger(pool, s)
  }

  async append (tenant: string, draft: AuditDraft): Promise<AuditEntry> {
    const appended = this.tail.then(async () => await this.write(tenant, draft))
    this.tail = appended.catch(() => {})
    return await appended
  }

  private async write (tenant: string, draft: AuditDraft): Promise<AuditEntry> {
    return await inTransaction(this.pool, async (client) => {
      await client.query("SELECT pg_advisory_xact_lock(hashtext('tollgate_audit:' || $1))", [tenant])
      const { rows } = await client.query<{ seq: string, hash: string }>(
        `SELECT seq, hash FROM ${this.s}.tollgate_audit WHERE tenant = $1 ORDER BY seq DESC LIMIT 1`, [tenant])
      const last = rows[0] === undefined ? null : { seq: Number(rows[0].seq), hash: rows[0].hash }
      const entry = chainEntry(last, tenant, draft, new Date().toISOString())
      await client.query(
        `INSERT INTO ${this.s}.tollgate_audit (tenant, seq, ts, kind, data, prev_hash, hash) VALUES ($1, $2, $3, $4, $5, $6, $7)`,
        [tenant, entry.seq, entry.ts, entry.kind, JSON.stringify(entry.data), entry.prev_hash, entry.hash])
      return entry
    })
  }

  async read (tenant: string, afterSeq: number, limit: number): Promise<AuditEntry[]> {
    const { rows } = await this.pool.query<Row>(
      `SELECT tenant, seq, ts, kind, data, prev_hash, hash FROM ${this.s}.tollgate_audit WHERE tenant = $1 AND seq > $2 ORDER BY seq LIMIT $3`,
      [tenant, afterSeq, limit])
    return rows.map((row) => ({ ...row, seq: Number(row.seq), kind: row.kind as AuditEntry['kind'], data: JSON.parse(row.data) as Record<string, unknown> }))
  }

  async close (): Promise<void> {
    await this.pool.end()
  }
}
