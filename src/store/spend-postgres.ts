/**
 * The spend ledger in PostgreSQL, shared by every instance: a reservation locks its budgets' rows
 * (always in key order, so two reservations never deadlock), reads them, and adds to them only
 * when none would pass its limit, in one transaction. A concurrent reservation of the same budget
 * waits on the row lock and then reads the committed sum.
 */
import type pg from 'pg'
import { inTransaction } from './pg-transaction.js'
import { judge, type SpendLedger, type SpendLine, type SpendVerdict } from './spend-ledger.js'

/** The ledger's table; `s` is the quoted schema name. */
export function spendDdl (s: string): string {
  return `CREATE TABLE IF NOT EXISTS ${s}.tollgate_spend (
  spend_key TEXT PRIMARY KEY,
  spent_nano BIGINT NOT NULL,
  expires_ms BIGINT NOT NULL
);`
}

export class PostgresSpendLedger implements SpendLedger {
  constructor (private readonly pool: pg.Pool, private readonly s: string) {}

  async reserve (lines: readonly SpendLine[], amountNano: number): Promise<SpendVerdict> {
    const sorted = [...lines].sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0))
    const keys = sorted.map((l) => l.key)
    const now = Date.now()
    return await inTransaction(this.pool, async (client) => {
      await client.query(
        `INSERT INTO ${this.s}.tollgate_spend (spend_key, spent_nano, expires_ms)
          SELECT k, 0, e FROM unnest($1::text[], $2::bigint[]) AS t(k, e) ORDER BY k ON CONFLICT (spend_key) DO NOTHING`,
        [keys, sorted.map((l) => l.expiresMs)]
      )
      const { rows } = await client.query<{ spend_key: string, spent_nano: string, expires_ms: string }>(
        `SELECT spend_key, spent_nano, expires_ms FROM ${this.s}.tollgate_spend WHERE spend_key = ANY($1::text[]) ORDER BY spend_key FOR UPDATE`,
        [keys]
      )
      const byKey = new Map(rows.map((r) => [r.spend_key, Number(r.expires_ms) > now ? Number(r.spent_nano) : 0]))
      const verdict = judge(lines, lines.map((l) => byKey.get(l.key) ?? 0), amountNano)
      if (verdict.ok) {
        await client.query(
          `UPDATE ${this.s}.tollgate_spend AS t SET
            spent_nano = CASE WHEN t.expires_ms > $3 THEN t.spent_nano ELSE 0 END + $2, expires_ms = v.e
          FROM unnest($1::text[], $4::bigint[]) AS v(k, e) WHERE t.spend_key = v.k`,
          [keys, amountNano, now, sorted.map((l) => l.expiresMs)]
        )
      }
      return verdict
    })
  }

  async adjust (keys: readonly string[], deltaNano: number): Promise<void> {
    await this.pool.query(
      `UPDATE ${this.s}.tollgate_spend SET spent_nano = GREATEST(0, spent_nano + $2) WHERE spend_key = ANY($1::text[])`,
      [[...keys].sort(), deltaNano]
    )
  }

  async spent (key: string): Promise<number> {
    const { rows } = await this.pool.query<{ spent_nano: string }>(
      `SELECT spent_nano FROM ${this.s}.tollgate_spend WHERE spend_key = $1 AND expires_ms > $2`, [key, Date.now()]
    )
    return rows.length === 0 ? 0 : Number(rows[0]?.spent_nano)
  }
}
