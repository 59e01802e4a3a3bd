/**
 * The audit chain's one hashing rule: each entry's `hash` is SHA-256 (hex) over its `prev_hash`
 * followed by the canonical JSON of the entry's own fields (`seq`, `ts`, `tenant`, `kind`,
 * `data`); the first entry of a tenant's chain has `prev_hash` of 64 zeros. Changing, removing
 * or reordering any entry breaks every hash after it (decision 0213).
 */
import { canonicalJson, digest } from '../core/json/canonical.js'

export const GENESIS_HASH = '0'.repeat(64)

export type AuditKind = 'permission' | 'approval' | 'tool_execution' | 'receipt'

/** What a writer appends; the ledger gives it its place in the chain. */
export interface AuditDraft {
  kind: AuditKind
  data: Record<string, unknown>
}

export interface AuditEntry extends AuditDraft {
  seq: number
  ts: string
  tenant: string
  prev_hash: string
  hash: string
}

export function entryHash (prevHash: string, entry: Pick<AuditEntry, 'seq' | 'ts' | 'tenant' | 'kind' | 'data'>): string {
  const { seq, ts, tenant, kind, data } = entry
  return digest(prevHash + canonicalJson({ seq, ts, tenant, kind, data }))
}

/** The entry after `previous` (null: the chain's first). */
export function chainEntry (previous: { seq: number, hash: string } | null, tenant: string, draft: AuditDraft, ts: string): AuditEntry {
  const seq = previous === null ? 1 : previous.seq + 1
  const prevHash = previous === null ? GENESIS_HASH : previous.hash
  const fields = { seq, ts, tenant, kind: draft.kind, data: draft.data }
  return { ...fields, prev_hash: prevHash, hash: entryHash(prevHash, fields) }
}

/**
 * The per-tenant, append-only chain in the store. `append` is safe with many writers (other
 * instances included): each backend serialises a tenant's appends in one transaction. Entries
 * are chained in the order `append` was called, so callers need not wait for one append before
 * the next.
 */
export interface AuditLedger {
  append: (tenant: string, draft: AuditDraft) => Promise<AuditEntry>
  /** A tenant's entries after `afterSeq`, oldest first. */
  read: (tenant: string, afterSeq: number, limit: number) => Promise<AuditEntry[]>
  close: () => Promise<void>
}

export class MemoryAuditLedger implements AuditLedger {
  private readonly chains = new Map<string, AuditEntry[]>()

  async append (tenant: string, draft: AuditDraft): Promise<AuditEntry> {
    const chain = this.chains.get(tenant) ?? []
    this.chains.set(tenant, chain)
    const entry = chainEntry(chain.at(-1) ?? null, tenant, draft, new Date().toISOString())
    chain.push(entry)
    return entry
  }

  async read (tenant: string, afterSeq: number, limit: number): Promise<AuditEntry[]> {
    return (this.chains.get(tenant) ?? []).filter((e) => e.seq > afterSeq).slice(0, limit)
  }

  async close (): Promise<void> {}
}
