/**
 * Tools that run in the client: declared per turn, called by the model, answered by the client
 * (src/turn/client-tool.ts).
 */
import { Type, type Static } from '@sinclair/typebox'
import { OpaqueId } from './common.js'

export const MAX_CLIENT_TOOLS = 64
/** Characters of one client tool result (as an approval's replacement text is bounded). */
export const MAX_CLIENT_RESULT_CHARS = 65_536

export const ClientToolDeclaration = Type.Object({
  name: Type.String({ pattern: '^[A-Za-z0-9_-]{1,64}$', description: 'Must not be the name of a tool the gateway has' }),
  description: Type.String({ maxLength: 4096, default: '' }),
  parameters: Type.Record(Type.String(), Type.Unknown(), {
    default: { type: 'object', properties: {} },
    description: 'JSON Schema of the arguments'
  })
}, { additionalProperties: false, title: 'ClientToolDeclaration' })
export type ClientToolDeclaration = Static<typeof ClientToolDeclaration>

export const ClientTools = Type.Array(ClientToolDeclaration, {
  maxItems: MAX_CLIENT_TOOLS,
  description: 'Tools the client runs: when the model calls one (and the policy lets it), the turn waits for POST /v1/turns/{id}/tool-results'
})

export const ToolResultBody = Type.Object({
  call_id: OpaqueId,
  output: Type.String({ maxLength: MAX_CLIENT_RESULT_CHARS, description: 'What the model reads as the call\'s result' })
}, { additionalProperties: false, title: 'ToolResultBody' })
export type ToolResultBody = Static<typeof ToolResultBody>

export const ToolResultAccepted = Type.Object({
  turn_id: OpaqueId,
  call_id: OpaqueId,
  request_id: OpaqueId
}, { title: 'ToolResultAccepted' })
