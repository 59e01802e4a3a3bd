/**
 * The audit chain in the SQLite database file. A tenant's next entry is read and written in one
 * transaction, so two writers never fork the chain; triggers refuse every UPDATE and DELETE
 * (append-only).
 */
import Database from 'better-sqlite3'
import { chainEntry, type AuditDraft, type AuditEntry, type AuditLedger } from './audit-chain.js'
import type { SharedCommit } from './sqlite-shared-commit.js'

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

interface Draft {
  tenant: string
  draft: AuditDraft
}

interface Pending extends Draft {
  resolve: (entry: AuditEntry) => void
  reject: (err: unknown) => void
}

/**
 * Over the store's own connection (`SqliteStore.auditLedger()`, what the gateway uses), appends
 * ride on the store's next event-log commit (decision 0277): the entries a tick records go in
 * the transaction that writes that tick's events, in the order they were appended. Over a
 * connection of its own (a path), each append is one `BEGIN IMMEDIATE` transaction.
 */
export class SqliteAuditLedger implements AuditLedger {
  private readonly db: Database.Database
  private readonly writeChain: (drafts: readonly Draft[]) => AuditEntry[]
  private readonly appendTx: ((drafts: readonly Draft[]) => AuditEntry[]) | null
  private readonly commits: SharedCommit | null
  /** Appends waiting for the commit they joined; null when none is open. */
  private batch: Pending[] | null = null

  constructor (source: string | { db: Database.Database, commits: SharedCommit }) {
    this.db = typeof source === 'string' ? new Database(source, { timeout: 5000 }) : source.db
    this.commits = typeof source === 'string' ? null : source.commits
    if (this.commits === null) this.db.pragma('journal_mode = WAL')
    this.db.exec(SCHEMA)
    const last = this.db.prepare<[string], { seq: number, hash: string }>('SELECT seq, hash FROM tollgate_audit WHERE tenant = ? ORDER BY seq DESC LIMIT 1')
    const insert = this.db.prepare('INSERT INTO tollgate_audit (tenant, seq, ts, kind, data, prev_hash, hash) VALUES (?, ?, ?, ?, ?, ?, ?)')
    this.writeChain = (drafts) => {
      const heads = new Map<string, { seq: number, hash: string } | null>()
      const ts = new Date().toISOString()
      return drafts.map(({ tenant, draft }) => {
        const head = heads.has(tenant) ? heads.get(tenant) ?? null : last.get(tenant) ?? null
        const entry = chainEntry(head, tenant, draft, ts)
        insert.run(tenant, entry.seq, entry.ts, entry.kind, JSON.stringify(entry.data), entry.prev_hash, entry.hash)
        heads.set(tenant, entry)
        return entry
      })
    }
    const tx = this.db.transaction(this.writeChain)
    this.appendTx = this.commits === null ? (drafts) => tx.immediate(drafts) : null
  }

  async append (tenant: string, draft: AuditDraft): Promise<AuditEntry> {
    if (this.appendTx !== null) return this.appendTx([{ tenant, draft }])[0] as AuditEntry
    return await new Promise<AuditEntry>((resolve, reject) => {
      const open = this.batch
      if (open !== null) {
        open.push({ tenant, draft, resolve, reject })
        return
      }
      const batch: Pending[] = [{ tenant, draft, resolve, reject }]
      this.batch = batch
      let entries: AuditEntry[] = []
      ;(this.commits as SharedCommit).join(() => {
        // Appends from here on open the next batch; a rerun (its transaction failed) writes this one again.
        if (this.batch === batch) this.batch = null
        entries = this.writeChain(batch)
      }).then(
        () => { batch.forEach((p, i) => { p.resolve(entries[i] as AuditEntry) }) },
        (err: unknown) => { for (const p of batch) p.reject(err) })
    })
  }

  async read (tenant: string, afterSeq: number, limit: number): Promise<AuditEntry[]> {
    const rows = this.db.prepare<[string, number, number], Row>(
      'SELECT tenant, seq, ts, kind, data, prev_hash, hash FROM tollgate_audit WHERE tenant = ? AND seq > ? ORDER BY seq LIMIT ?'
    ).all(tenant, afterSeq, limit)
    return rows.map(entryOf)
  }

  async close (): Promise<void> {
    // A shared connection is the store's to close (after the writes that joined its commits).
    if (this.commits === null) this.db.close()
  }
}
