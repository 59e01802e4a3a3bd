/**
 * The audit chain in the SQLite database file, on a connection of its own. A tenant's next entry
 * is read and written in one `BEGIN IMMEDIATE` transaction, so two writers never fork the chain;
 * triggers refuse every UPDATE and DELETE (append-only).
 */
import Database from 'better-sqlite3'
import { chainEntry, type AuditDraft, type AuditEntry, type AuditLedger } from './audit-chain.js'

const SCHEMA = `
CREATE TABLE IF NOT EXISTS tollgate_audit (
  tenant TEXT NOT NULL,
  seq INTEGER NOT NULL,
  ts TEXT NOT NULL,
  kind TEXT NOT NULL,
  data TEXT NOT NULL,
  prev_hash TEXT NOT NULL,
  hash TEXT NOT NULL,
  PRIMARY KEY (tenant, seq)
) WITHOUT ROWID;
CREATE TRIGGER IF NOT EXISTS tollgate_audit_no_update BEFORE UPDATE ON tollgate_audit
BEGIN SELECT RAISE(ABORT, 'tollgate_audit is append-only'); END;
CREATE TRIGGER IF NOT EXISTS tollgate_audit_no_delete BEFORE DELETE ON tollgate_audit
BEGIN SELECT RAISE(ABORT, 'tollgate_audit is append-only'); END;
`

interface Row { tenant: string, seq: number, ts: string, kind: string, data: string, prev_hash: string, hash: string }

function entryOf (row: Row): AuditEntry {
  return { ...row, kind: row.kind as AuditEntry['kind'], data: JSON.parse(row.data) as Record<string, unknown> }
}

export class SqliteAuditLedger implements AuditLedger {
  private readonly db: Database.Database
  private readonly appendTx: (tenant: string, draft: AuditDraft) => AuditEntry

  constructor (path: string) {
    this.db = new Database(path, { timeout: 5000 })
    this.db.pragma('journal_mode = WAL')
    this.db.exec(SCHEMA)
    const last = this.db.prepare<[string], { seq: number, hash: string }>('SELECT seq, hash FROM tollgate_audit WHERE tenant = ? ORDER BY seq DESC LIMIT 1')
    const insert = this.db.prepare('INSERT INTO tollgate_audit (tenant, seq, ts, kind, data, prev_hash, hash) VALUES (?, ?, ?, ?, ?, ?, ?)')
    const tx = this.db.transaction((tenant: string, draft: AuditDraft) => {
      const entry = chainEntry(last.get(tenant) ?? null, tenant, draft, new Date().toISOString())
      insert.run(tenant, entry.seq, entry.ts, entry.kind, JSON.stringify(entry.data), entry.prev_hash, entry.hash)
      return entry
    })
    this.appendTx = (tenant, draft) => tx.immediate(tenant, draft)
  }

  async append (tenant: string, draft: AuditDraft): Promise<AuditEntry> {
    return this.appendTx(tenant, draft)
  }

  async read (tenant: string, afterSeq: number, limit: number): Promise<AuditEntry[]> {
    const rows = this.db.prepare<[string, number, number], Row>(
      'SELECT tenant, seq, ts, kind, data, prev_hash, hash FROM tollgate_audit WHERE tenant = ? AND seq > ? ORDER BY seq LIMIT ?'
    ).all(tenant, afterSeq, limit)
    return rows.map(entryOf)
  }

  async close (): Promise<void> {
    this.db.close()
  }
}
