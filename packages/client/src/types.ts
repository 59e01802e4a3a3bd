/**
 * Wire types of the client (generated from the gateway's schemas into ./wire.ts) plus the two
 * platform seams: WebSocket and fetch.
 */
import type { ServerFrame, TurnEvent } from './wire.js'

export type * from './wire.js'

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

export type FetchLike = (
  url: string, init: { method: string, headers: Record<string, string>, body?: string }
) => Promise<FetchResponseLike>

/** WebSocket.OPEN in every implementation. */
export const WS_OPEN = 1

export const WS_PROTOCOL = 'tollgate.v1'
export const BEARER_PROTOCOL_PREFIX = 'bearer.'
