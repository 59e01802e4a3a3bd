/** Public surface of the Tollgate client SDK (browser and Node). */
export { TollgateClient, DEFAULT_RECONNECT, checkToken } from './client.js'
export type { ClientNotice, ClientOptions, ConnectionState, ReconnectPolicy } from './client.js'
export { TollgateClientError } from './errors.js'
export type { ClientErrorCode } from './errors.js'
export { TurnStream, isTerminal } from './stream.js'
export { modelArguments, resultText, timeLeft } from './format.js'
export type * from './types.js'
export type { ListQuery } from './listing.js'
