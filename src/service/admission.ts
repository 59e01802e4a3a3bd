/**
 * Admission of a new turn, before anything runs: an idempotent retry gets the turn it already
 * started (the claim lives in the store, shared by every instance); the owner connection must
 * be a live one of the same principal; capacity is bounded overall and per principal; a session
 * belongs to one principal and runs one turn at a time (on any instance); the principal may use
 * the session's agent (agent-access.ts). A session id names a session within the caller's tenant
 * only: another tenant's session of the same id is another session, never in the way. Refusals
 * are typed errors; cross-principal attempts (within the tenant) are audited.
 */
import { setTimeout as sleep } from 'node:timers/promises'
import type { Logger } from 'pino'
import type { TurnRequest } from '../../schemas/turn.js'
import type { Config } from '../core/config.js'
import { TollgateError } from '../core/errors.js'
import { timeOrderedUuid } from '../core/ids.js'
import { canonicalJson } from '../core/json/canonical.js'
import { sessionKey, tenantOf } from '../core/tenancy.js'
import { principalKey, type Principal } from '../auth/principal.js'
import type { IdempotencyClaim, SessionRecord, Store, TurnRecord } from '../store/store.js'
import { requireAgentAccess } from './agent-access.js'
import type { ConnectionRegistry } from './connections.js'
import type { RunningTurn } from './running-turn.js'

export interface AdmissionDeps {
  config: Config
  store: Store
  connections: ConnectionRegistry
  log: Logger
  /** The turns running on this instance, by id. */
  active: ReadonlyMap<string, RunningTurn>
}

/** How long a refused start with an idempotency key looks for a racing original's claim: 10 × 50 ms. */
const RACE_POLLS = 10
const RACE_POLL_MS = 50

export class Admission {
  /** Running turn by sessionKey(tenant, session id). */
  private readonly busySessions = new Map<string, string>()

  constructor (private readonly deps: AdmissionDeps) {}

  /** The store claim a request with an `idempotency_key` makes (held for `turns.retention_ms`); null without one. */
  claimOf (owner: string, request: TurnRequest): IdempotencyClaim | null {
    if (request.idempotency_key === undefined) return null
    // Defaults spelled out or left out are the same request; so is a retry from another socket
    // (a client that lost its connection retries from a new one, on any instance).
    const fingerprint = canonicalJson({
      ...request,
      interactive: request.interactive !== false,
      detach: request.detach === true,
      idempotency_key: undefined,
      owner_connection: undefined
    })
    return { owner, key: request.idempotency_key, fingerprint, expiresMs: Date.now() + this.deps.config.turns.retention_ms }
  }

  /** The turn a claim's key already started (on any instance), or null; another body is a conflict. */
  async repeatOf (claim: IdempotencyClaim): Promise<string | null> {
    const seen = await this.deps.store.getIdempotency(claim.owner, claim.key)
    if (seen === null) return null
    if (seen.fingerprint !== claim.fingerprint) throw new TollgateError('IDEMPOTENCY_CONFLICT')
    return seen.turnId
  }

  /**
   * The turn that won a race for `claim`, when a start with that key was refused with `refusal`.
   * A repeat racing its original (here or on another instance) can find the session busy or the
   * principal's slots taken by the racers before its claim loses: the original's claim, once
   * committed, is the answer then. Racers arrive within moments of each other; otherwise the
   * refusal stands.
   */
  async raceWinner (claim: IdempotencyClaim | null, refusal: unknown): Promise<string> {
    if (claim === null || !(refusal instanceof TollgateError) || !(refusal.code === 'SESSION_BUSY' || refusal.code === 'TOO_MANY_TURNS')) throw refusal
    for (let attempt = 0; attempt < RACE_POLLS; attempt++) {
      const original = await this.repeatOf(claim)
      if (original !== null) return original
      await sleep(RACE_POLL_MS)
    }
    throw refusal
  }

  checkOwnerConnection (owner: string, request: TurnRequest, ownerConnection: string | null): void {
    if (ownerConnection === null) return
    const connection = this.deps.connections.get(ownerConnection)
    // A client may name only a WebSocket as owner: it is the one kind that can answer approvals later.
    const named = request.owner_connection === ownerConnection
    if (connection === undefined || connection.principal !== owner || (named && connection.kind !== 'ws')) {
      if (connection !== undefined && connection.principal !== owner) {
        this.deps.log.warn({ audit: 'cross_principal_connection', principal: owner, connection_id: connection.id },
          'refused a turn owned by a connection of another principal')
      }
      throw new TollgateError('CONNECTION_NOT_FOUND')
    }
  }

  /** One principal may not take every slot: the per-principal cap keeps other tenants served. */
  checkCapacity (owner: string): void {
    const { turns } = this.deps.config
    if (this.deps.active.size >= turns.max_active_turns) throw new TollgateError('TOO_MANY_TURNS')
    let owned = 0
    for (const a of this.deps.active.values()) if (a.record.owner === owner) owned++
    if (owned >= turns.max_active_turns_per_principal) {
      throw new TollgateError('TOO_MANY_TURNS',
        `this principal already runs ${owned} turns (at most ${turns.max_active_turns_per_principal}); wait for one to finish`)
    }
  }

  /**
   * SESSION_BUSY only tells a principal about its own session: a session held by another
   * principal's running turn (also one whose record is not stored yet) is FORBIDDEN.
   */
  checkSessionFree (sessionId: string, owner: string): void {
    const running = this.busySessions.get(sessionKey(tenantOf(owner), sessionId))
    if (running === undefined) return
    if (this.deps.active.get(running)?.record.owner !== owner) this.refuseSession(owner, sessionId)
    throw new TollgateError('SESSION_BUSY')
  }

  /**
   * The session a new turn runs in: the stored one it continues (once it may run there), or a
   * new one of the requested (or default) agent. A session keeps the agent it started with.
   */
  async sessionFor (request: TurnRequest, principal: Principal, nowIso: string): Promise<SessionRecord> {
    const owner = principalKey(principal)
    const { config } = this.deps
    // An agent asked for by name is checked before anything is read: the refusal then says
    // nothing about the session.
    if (request.agent !== undefined) requireAgentAccess(config, principal, request.agent)
    const sessionId = request.session_id ?? `ses_${timeOrderedUuid()}`
    // Ownership before busy-ness: another principal's session answers FORBIDDEN whether or not a
    // turn runs in it, so the answer says nothing about that principal's activity. A new id was
    // just made here: there is nothing stored to read.
    const existing = request.session_id === undefined ? null : await this.deps.store.getSession(principal.tenant, sessionId)
    if (existing !== null && existing.owner !== owner) this.refuseSession(owner, sessionId)
    // A session keeps its agent: one the principal may no longer use (access changed) is refused too.
    if (existing !== null) requireAgentAccess(config, principal, existing.agent)
    this.checkSessionFree(sessionId, owner)
    // Another instance may run this session's latest turn (this process's busy map cannot see it).
    const latest = existing?.turn_ids.at(-1)
    if (latest !== undefined && !this.deps.active.has(latest) && (await this.deps.store.getTurn(latest))?.status === 'running') {
      throw new TollgateError('SESSION_BUSY')
    }
    if (existing === null) {
      const agent = request.agent ?? config.default_agent
      // A named agent was checked above.
      if (request.agent === undefined) requireAgentAccess(config, principal, agent)
      return { session_id: sessionId, owner, agent, created_at: nowIso, updated_at: nowIso, turn_ids: [], history: [], always_allowed: [] }
    }
    if (request.agent !== undefined && request.agent !== existing.agent) {
      throw new TollgateError('INVALID_REQUEST', `session ${sessionId} belongs to agent ${existing.agent}`)
    }
    return existing
  }

  /** Marks the turn's session busy (the idempotency claim is written with the turn, by the store). */
  hold (turn: TurnRecord): void {
    this.busySessions.set(sessionKey(tenantOf(turn.owner), turn.session_id), turn.turn_id)
  }

  /** The turn has ended, or never started. */
  release (turn: TurnRecord): void {
    const key = sessionKey(tenantOf(turn.owner), turn.session_id)
    if (this.busySessions.get(key) === turn.turn_id) this.busySessions.delete(key)
  }

  private refuseSession (owner: string, sessionId: string): never {
    this.deps.log.warn({ audit: 'cross_principal_session', principal: owner, session_id: sessionId }, 'refused a turn in a session of another principal')
    throw new TollgateError('FORBIDDEN')
  }
}
