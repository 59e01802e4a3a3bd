/**
 * `http_tools.<name>`: a tool the gateway runs by POSTing the call to the application's own HTTP
 * endpoint, signed as a Standard Webhook (src/tools/http-tools/).
 */
import { Type, type Static } from '@sinclair/typebox'

export const HTTP_TOOL_NAME = '^[A-Za-z0-9_-]{1,64}$'

export const HttpToolApproval = Type.Union([
  Type.Literal('always'),
  Type.Literal('never'),
  Type.Object({
    when: Type.Unknown({ description: 'A JSON Logic expression over the call\'s arguments, e.g. { ">": [{ "var": "amount" }, 100] }; true asks' })
  }, { additionalProperties: false })
], {
  default: 'always',
  description: 'Whether a call waits for a person when the risk profile would ask by default; always_ask, auto_approve and grants still apply'
})

export const HttpToolConfig = Type.Object({
  url: Type.String({ pattern: '^https?://', maxLength: 2048, description: 'Where each call is POSTed' }),
  description: Type.String({ minLength: 1, maxLength: 4096, description: 'What the model reads about the tool' }),
  parameters: Type.Record(Type.String(), Type.Unknown(), {
    default: { type: 'object', properties: {}, additionalProperties: false },
    description: 'JSON Schema of the arguments (checked before the call is sent)'
  }),
  secret_env: Type.String({
    minLength: 1, description: 'Environment variable holding the Standard Webhooks signing secret (whsec_<base64>, or base64 of at least 24 bytes)'
  }),
  timeout_ms: Type.Integer({ minimum: 100, maximum: 600_000, default: 30_000, description: 'Bound on one attempt, connection to last byte' }),
  idempotent: Type.Boolean({
    default: false,
    description: 'true: a failed attempt (connection error, timeout, 408, 429, 5xx) is retried, with the same webhook-id; false: never retried'
  }),
  max_attempts: Type.Integer({ minimum: 1, maximum: 5, default: 3, description: 'With idempotent = true: attempts in all' }),
  allow_private: Type.Boolean({ default: false, description: 'true: the URL may resolve to a loopback or private address' }),
  max_response_bytes: Type.Integer({ minimum: 1024, maximum: 16 * 1024 * 1024, default: 1_048_576, description: 'A longer response body is an error result' }),
  needs_approval: HttpToolApproval,
  risk: Type.Optional(Type.Union([Type.Literal('low'), Type.Literal('medium'), Type.Literal('high')], {
    description: 'The risk label approvers see; default medium'
  }))
}, { additionalProperties: false })
export type HttpToolConfig = Static<typeof HttpToolConfig>

/** What the gateway POSTs for one call. */
export const HttpToolRequest = Type.Object({
  tool: Type.String(),
  call_id: Type.String(),
  turn_id: Type.String(),
  tenant: Type.String(),
  arguments: Type.Record(Type.String(), Type.Unknown())
}, { title: 'HttpToolRequest' })

/** What the endpoint answers (2xx, application/json). */
export const HttpToolResponse = Type.Object({
  output: Type.String({ description: 'The text the model reads' }),
  data: Type.Optional(Type.Unknown({ description: 'Structured result, kept with the call, never shown to the model' })),
  is_error: Type.Optional(Type.Boolean({ description: 'true: the call failed; output says why' }))
}, { title: 'HttpToolResponse' })
export type HttpToolResponse = Static<typeof HttpToolResponse>
