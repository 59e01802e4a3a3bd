/**
 * `tollgate audit verify FILE`: checks an exported audit chain (GET /v1/audit?format=jsonl)
 * offline. Written apart from the gateway's code on purpose, from the documented rule only:
 * hash = SHA-256 hex of prev_hash + canonical JSON (keys sorted at every level) of
 * {seq, ts, tenant, kind, data}; each line's prev_hash is the line before's hash; seq goes up by
 * one; a chain that starts at seq 1 starts from 64 zeros.
 */
import { createHash } from 'node:crypto'

const GENESIS = '0'.repeat(64)

function canonical (value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>).filter(([, v]) => v !== undefined)
    entries.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonical(v)}`).join(',')}}`
  }
  return JSON.stringify(value)
}

export type VerifyResult = { ok: true, entries: number } | { ok: false, line: number, problem: string }

export function verifyAuditChain (text: string): VerifyResult {
  const lines = text.split('\n')
  if (lines.at(-1) === '') lines.pop()
  let previous: { seq: number, hash: string, tenant: string } | null = null
  for (const [index, line] of lines.entries()) {
    const fail = (problem: string): VerifyResult => ({ ok: false, line: index + 1, problem })
    let entry: Record<string, unknown>
    try {
      entry = JSON.parse(line) as Record<string, unknown>
    } catch {
      return fail('not JSON')
    }
    const { seq, ts, tenant, kind, data, prev_hash: prevHash, hash } = entry
    if (typeof seq !== 'number' || typeof prevHash !== 'string' || typeof hash !== 'string' || typeof tenant !== 'string') {
      return fail('missing seq, tenant, prev_hash or hash')
    }
    if (previous === null && seq === 1 && prevHash !== GENESIS) return fail('the first entry does not start from the genesis hash')
    if (previous !== null) {
      if (seq !== previous.seq + 1) return fail(`seq ${seq} does not follow ${previous.seq}`)
      if (tenant !== previous.tenant) return fail('the tenant changes within the chain')
      if (prevHash !== previous.hash) return fail('prev_hash is not the previous entry\'s hash')
    }
    const expected: string = createHash('sha256').update(prevHash + canonical({ seq, ts, tenant, kind, data })).digest('hex')
    if (expected !== hash) return fail('hash does not match the entry')
    previous = { seq, hash, tenant }
  }
  return { ok: true, entries: lines.length }
}
