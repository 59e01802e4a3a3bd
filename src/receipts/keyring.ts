/**
 * Receipt master keys and the per-turn keys derived from them. A turn's receipt key is
 * HKDF-SHA256(master, salt, info = turn id): any instance holding the same master key derives the
 * same per-turn key, so a receipt verifies on every instance and after any restart, and nothing
 * secret is ever written to the store — a turn record keeps only the id of the master key.
 *
 * Rotation: `receipts.keys` lists master keys newest first. The first signs new turns; every
 * listed key still verifies the turns signed under it. A key id no longer listed answers
 * `key_unavailable` (never a false `mismatch`). With no key configured, the process draws a
 * random master key under an id of its own: receipts verify in this process only.
 */
import { hkdfSync, randomBytes, randomUUID } from 'node:crypto'
import type { Config } from '../core/config.js'
import { ConfigError } from '../core/config.js'
import { ReceiptKey } from './keys.js'

/** Master keys are at least this long (the HMAC-SHA256 key size). */
export const MIN_MASTER_KEY_BYTES = 32
/** Fixed, public: HKDF needs no secret salt, only a per-use `info` (the turn id). */
const SALT = Buffer.from('tollgate receipt key v1', 'utf8')

export interface MasterKey {
  id: string
  secret: Buffer
}

export class ReceiptKeyring {
  private readonly keys: ReadonlyMap<string, Buffer>
  /** Id of the key new turns are signed under. */
  readonly currentId: string

  constructor (keys: readonly MasterKey[]) {
    const [first] = keys
    if (first === undefined) throw new Error('a receipt keyring needs at least one master key')
    this.currentId = first.id
    this.keys = new Map(keys.map((k) => [k.id, k.secret]))
  }

  /** A keyring of one random master key that dies with the process. */
  static ephemeral (): ReceiptKeyring {
    return new ReceiptKeyring([{ id: `process-${randomUUID()}`, secret: randomBytes(MIN_MASTER_KEY_BYTES) }])
  }

  /** The turn's receipt key under `keyId`, or null when that master key is not (or no longer) configured. */
  keyFor (turnId: string, keyId: string): ReceiptKey | null {
    const master = this.keys.get(keyId)
    if (master === undefined) return null
    return new ReceiptKey(Buffer.from(hkdfSync('sha256', master, SALT, Buffer.from(turnId, 'utf8'), 32)))
  }

  /** The key a new turn signs with, and the id its record keeps. */
  forNewTurn (turnId: string): { keyId: string, key: ReceiptKey } {
    const key = this.keyFor(turnId, this.currentId)
    if (key === null) throw new Error('the current receipt key is missing from its own keyring')
    return { keyId: this.currentId, key }
  }
}

/** The configured keyring (`receipts.keys`, secrets from the environment), or an ephemeral one. */
export function receiptKeyring (config: Config, env: NodeJS.ProcessEnv): ReceiptKeyring {
  const listed = config.receipts.keys
  if (listed.length === 0) return ReceiptKeyring.ephemeral()
  const seen = new Set<string>()
  const keys = listed.map(({ id, secret_env: name }) => {
    if (seen.has(id)) throw new ConfigError(`receipts.keys: the id ${id} is listed twice`)
    seen.add(id)
    const value = env[name]
    if (value === undefined || value === '') {
      throw new ConfigError(`receipts.keys[${id}].secret_env: environment variable ${name} is not set`)
    }
    const secret = Buffer.from(value, 'base64')
    if (secret.length < MIN_MASTER_KEY_BYTES || !/^[A-Za-z0-9+/_-]+={0,2}$/.test(value.trim())) {
      throw new ConfigError(`receipts.keys[${id}]: ${name} must hold base64 of at least ${MIN_MASTER_KEY_BYTES} random bytes`)
    }
    return { id, secret }
  })
  return new ReceiptKeyring(keys)
}
