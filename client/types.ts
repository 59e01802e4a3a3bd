/**
 * Wire types of the client, taken from the gateway's own schemas (type-only imports, so no
 * TypeBox code reaches the browser bundle) plus the two platform seams: WebSocket and fetch.
 */
import type { EventEnvelope, TurnEvent } from '../schemas/events.js'
import type { ClientFrame, ServerFrame } from '../schemas/ws.js'
import type { Turn, TurnAccepted, TurnRequest, EventsPage } from '../schemas/turn.js'
import type { OperatorDecision } from '../schemas/approval.js'

export type { ClientFrame, EventEnvelope, EventsPage, OperatorDecision, ServerFrame, Turn, TurnAccepted, TurnEvent, TurnRequest }

export type TurnEventOf<K extends TurnEvent['kind']> = Extract<TurnEvent, { kind: K }>
export type ServerFrameOf<T extends ServerFrame['type']> = Extract<ServerFrame, { type: T }>

/** The subset of the WHATWG WebSocket both browsers and the `ws` package implement. */
export interface WebSocketLike {
  readonly readyState: number
  send (data: string): void
  close (code?: number, reason?: string): void
  onopen: ((event: unknown) => void) | null
  onmessage: ((event: { data: unknown }) => void) | null
  onclose: ((event: { code: number, reason: string }) => void) | null
  onerror: ((event: unknown) => void) | null
}

export type WebSocketFactory = new (url: string, protocols: string[]) => WebSocketLike

export interface FetchResponseLike {
  readonly status: number
  readonly ok: boolean
  text (): Promise<string>
}

export type FetchLike = (url: string, init: { method: string, headers: Record<string, string>, body?: string }) => Promise<FetchResponseLike>

/** WebSocket.OPEN in every implementation. */
export const WS_OPEN = 1

export const WS_PROTOCOL = 'tollgate.v1'
export const BEARER_PROTOCOL_PREFIX = 'bearer.'
