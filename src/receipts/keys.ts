/**
 * Tool receipts: HMAC-SHA256 evidence that THIS gateway executed a call and saw this output.
 * A receipt is not an approval record, not durable storage, not a chain and not a proof to
 * third parties: it verifies only while its key lives, against the same gateway.
 *
 * MAC input (canonical JSON, sorted keys):
 *   {"args_sha256","call_id","output_sha256","tool","ts","turn_id","v":1}
 * Format: `tg-receipt-<unix seconds>-<base64url(mac), no padding>`.
 */
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto'
import { canonicalJson, digest } from '../core/json/canonical.js'
import type { ReceiptGenerator, ReceiptInput } from '../turn/context.js'

const PREFIX = 'tg-receipt-'

function mac (key: Buffer, input: ReceiptInput, ts: number): Buffer {
  const message = canonicalJson({
    v: 1,
    turn_id: input.turnId,
    call_id: input.callId,
    tool: input.tool,
    args_sha256: digest(canonicalJson(input.arguments)),
    output_sha256: digest(input.output),
    ts
  })
  return createHmac('sha256', key).update(message).digest()
}

export class ReceiptKey implements ReceiptGenerator {
  private readonly key: Buffer

  constructor (key: Buffer = randomBytes(32)) {
    this.key = key
  }

  sign (input: ReceiptInput, now: number = Date.now()): string {
    const ts = Math.floor(now / 1000)
    return `${PREFIX}${ts}-${mac(this.key, input, ts).toString('base64url')}`
  }

  verify (receipt: string, input: ReceiptInput): boolean {
    return this.check(receipt, input).valid
  }

  /** Why a receipt does not verify: it is not a receipt at all, or it was not made for this input. */
  check (receipt: string, input: ReceiptInput): ReceiptVerdict {
    const parsed = parseReceipt(receipt)
    if (parsed === null) return { valid: false, reason: 'malformed' }
    const expected = mac(this.key, input, parsed.ts)
    return parsed.mac.length === expected.length && timingSafeEqual(parsed.mac, expected)
      ? { valid: true }
      : { valid: false, reason: 'mismatch' }
  }
}

export type ReceiptVerdict = { valid: true } | { valid: false, reason: 'malformed' | 'mismatch' }

export function parseReceipt (receipt: string): { ts: number, mac: Buffer } | null {
  if (!receipt.startsWith(PREFIX)) return null
  const rest = receipt.slice(PREFIX.length)
  const dash = rest.indexOf('-')
  if (dash <= 0) return null
  const tsText = rest.slice(0, dash)
  const macText = rest.slice(dash + 1)
  // One MAC has exactly one receipt string, so an altered string never verifies: no leading zeros
  // in the timestamp, and the 43rd character's two unused bits must be zero (canonical base64url).
  if (!/^(?:0|[1-9]\d{0,11})$/.test(tsText) || !/^[A-Za-z0-9_-]{43}$/.test(macText)) return null
  const decoded = Buffer.from(macText, 'base64url')
  if (decoded.toString('base64url') !== macText) return null
  return { ts: Number(tsText), mac: decoded }
}
