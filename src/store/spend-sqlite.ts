/**
 * The spend ledger in the SQLite database: a reservation's reads and additions run in one
 * immediate transaction, so no other writer (in this process or another) comes between them.
 */
import type Database from 'better-sqlite3'
import { judge, type SpendLedger, type SpendLine, type SpendVerdict } from './spend-ledger.js'

const TABLE = `CREATE TABLE IF NOT EXISTS tollgate_spend (
  spend_key TEXT PRIMARY KEY,
  spent_nano INTEGER NOT NULL,
  expires_ms INTEGER NOT NULL
) WITHOUT ROWID;`

export class SqliteSpendLedger implements SpendLedger {
  private readonly reserveTx: (lines: readonly SpendLine[], amount: number, now: number) => SpendVerdict
  private readonly adjustTx: (keys: readonly string[], delta: number) => void
  private readonly read: Database.Statement<[string, number], { spent_nano: number }>

  constructor (db: Database.Database) {
    db.exec(TABLE)
    this.read = db.prepare('SELECT spent_nano FROM tollgate_spend WHERE spend_key = ? AND expires_ms > ?')
    // An expired row (yesterday's tenant budget) starts again from 0.
    const add = db.prepare(`INSERT INTO tollgate_spend (spend_key, spent_nano, expires_ms) VALUES (?, ?, ?)
      ON CONFLICT (spend_key) DO UPDATE SET
        spent_nano = CASE WHEN tollgate_spend.expires_ms > ? THEN tollgate_spend.spent_nano ELSE 0 END + excluded.spent_nano,
        expires_ms = excluded.expires_ms`)
    const shift = db.prepare('UPDATE tollgate_spend SET spent_nano = MAX(0, spent_nano + ?) WHERE spend_key = ?')
    const reserve = db.transaction((lines: readonly SpendLine[], amount: number, now: number): SpendVerdict => {
      const spent = lines.map((l) => this.read.get(l.key, now)?.spent_nano ?? 0)
      const verdict = judge(lines, spent, amount)
      if (verdict.ok) for (const l of lines) add.run(l.key, amount, l.expiresMs, now)
      return verdict
    })
    this.reserveTx = (lines, amount, now) => reserve.immediate(lines, amount, now)
    const adjust = db.transaction((keys: readonly string[], delta: number) => { for (const k of keys) shift.run(delta, k) })
    this.adjustTx = (keys, delta) => { adjust.immediate(keys, delta) }
  }

  async reserve (lines: readonly SpendLine[], amountNano: number): Promise<SpendVerdict> {
    return this.reserveTx(lines, amountNano, Date.now())
  }

  async adjust (keys: readonly string[], deltaNano: number): Promise<void> {
    this.adjustTx(keys, deltaNano)
  }

  async spent (key: string): Promise<number> {
    return this.read.get(key, Date.now())?.spent_nano ?? 0
  }
}
