/**
 * One error type for everything the client reports: gateway errors keep the gateway's stable
 * code (WS `error` frames and problem JSON alike); client-side failures have codes of their own.
 */
export type ClientErrorCode =
  | 'DISCONNECTED'
  | 'TIMEOUT'
  | 'CLOSED'
  | 'CONNECT_FAILED'
  | 'INVALID_TOKEN'
  | 'PROTOCOL'
  | (string & {})

export class TollgateClientError extends Error {
  readonly code: ClientErrorCode
  /** HTTP status when the error came from an HTTP route. */
  readonly status: number | undefined

  constructor (code: ClientErrorCode, message: string, status?: number) {
    super(message)
    this.name = 'TollgateClientError'
    this.code = code
    this.status = status
  }
}
