import { Type, type Static } from '@sinclair/typebox'
import { ClientId, EventCursor, OpaqueId } from './common.js'
import { TurnEvent } from './events.js'
import { MAX_MESSAGE_CHARS, TurnRequestProperties, TurnStatus } from './turn.js'
import { OperatorDecision, MAX_REPLACEMENT_CHARS } from './approval.js'
import { SteerAccepted } from './steering.js'
import { MAX_CLIENT_RESULT_CHARS } from './client-tools.js'

/** Optional client-chosen correlation id, echoed on the direct answer or error for that frame. */
const Ref = Type.Optional(Type.String({ minLength: 1, maxLength: 64 }))

export const HelloFrame = Type.Object({
  type: Type.Literal('hello'),
  ref: Ref,
  client: Type.Optional(Type.String({ maxLength: 128 }))
}, { additionalProperties: false })

const SubscribeTarget = {
  turn_id: Type.Optional(OpaqueId),
  session_id: Type.Optional(ClientId)
}

export const SubscribeFrame = Type.Object({
  type: Type.Literal('subscribe'),
  ref: Ref,
  ...SubscribeTarget,
  after_seq: Type.Optional(EventCursor)
}, { additionalProperties: false })

export const UnsubscribeFrame = Type.Object({
  type: Type.Literal('unsubscribe'),
  ref: Ref,
  ...SubscribeTarget
}, { additionalProperties: false })

export const TurnStartFrame = Type.Object({
  type: Type.Literal('turn.start'),
  ref: Ref,
  ...TurnRequestProperties
}, { additionalProperties: false })

export const ApprovalRespondFrame = Type.Object({
  type: Type.Literal('approval.respond'),
  ref: Ref,
  request_id: OpaqueId,
  decision: OperatorDecision,
  replacement: Type.Optional(Type.String({ maxLength: MAX_REPLACEMENT_CHARS }))
}, { additionalProperties: false })

export const CancelFrame = Type.Object({
  type: Type.Literal('cancel'),
  ref: Ref,
  turn_id: OpaqueId
}, { additionalProperties: false })

/** A message for a running turn's next model call (steering), as `POST /v1/turns/{turn_id}/messages`. */
export const TurnSteerFrame = Type.Object({
  type: Type.Literal('turn.steer'),
  ref: Ref,
  turn_id: OpaqueId,
  message: Type.String({ minLength: 1, maxLength: MAX_MESSAGE_CHARS })
}, { additionalProperties: false })

export const PingFrame = Type.Object({
  type: Type.Literal('ping'),
  ref: Ref
}, { additionalProperties: false })

/** The result of a client tool call the turn waits for (POST /v1/turns/{id}/tool-results over the socket). */
export const ToolResultFrame = Type.Object({
  type: Type.Literal('tool.result'),
  ref: Ref,
  turn_id: OpaqueId,
  call_id: OpaqueId,
  output: Type.String({ maxLength: MAX_CLIENT_RESULT_CHARS })
}, { additionalProperties: false })

export const ClientFrameSchemas = {
  hello: HelloFrame,
  subscribe: SubscribeFrame,
  unsubscribe: UnsubscribeFrame,
  'turn.start': TurnStartFrame,
  'approval.respond': ApprovalRespondFrame,
  'tool.result': ToolResultFrame,
  cancel: CancelFrame,
  'turn.steer': TurnSteerFrame,
  ping: PingFrame
} as const

export const ClientFrame = Type.Union(Object.values(ClientFrameSchemas), { title: 'ClientFrame' })
export type ClientFrame = Static<typeof ClientFrame>
export type ClientFrameType = keyof typeof ClientFrameSchemas
export type ClientFrameOf<T extends ClientFrameType> = Static<typeof ClientFrameSchemas[T]>

export const WelcomeFrame = Type.Object({
  type: Type.Literal('welcome'),
  ref: Ref,
  connection_id: Type.String(),
  heartbeat_ms: Type.Integer()
})

export const EventFrame = Type.Object({
  type: Type.Literal('event'),
  turn_id: Type.String(),
  seq: Type.Integer({ minimum: 1 }),
  ts: Type.String(),
  event: TurnEvent
})

export const SubscribedFrame = Type.Object({
  type: Type.Literal('subscribed'),
  ref: Ref,
  turn_id: Type.Optional(Type.String()),
  session_id: Type.Optional(Type.String()),
  status: Type.Optional(TurnStatus),
  last_seq: Type.Optional(Type.Integer({ minimum: 0 }))
})

export const UnsubscribedFrame = Type.Object({
  type: Type.Literal('unsubscribed'),
  ref: Ref,
  turn_id: Type.Optional(Type.String()),
  session_id: Type.Optional(Type.String())
})

export const TurnAcceptedFrame = Type.Object({
  type: Type.Literal('turn.accepted'),
  ref: Ref,
  turn_id: Type.String(),
  session_id: Type.String(),
  status: TurnStatus
})

export const ApprovalAckFrame = Type.Object({
  type: Type.Literal('approval.accepted'),
  ref: Ref,
  request_id: Type.String(),
  turn_id: Type.String(),
  decision: OperatorDecision
})

export const CancelAckFrame = Type.Object({
  type: Type.Literal('cancel.accepted'),
  ref: Ref,
  turn_id: Type.String(),
  status: TurnStatus
})

export const SteerAckFrame = Type.Object({
  type: Type.Literal('steer.accepted'),
  ref: Ref,
  ...SteerAccepted.properties
})

export const ToolResultAckFrame = Type.Object({
  type: Type.Literal('tool.result.accepted'),
  ref: Ref,
  turn_id: Type.String(),
  call_id: Type.String(),
  request_id: Type.String()
})

export const PongFrame = Type.Object({ type: Type.Literal('pong'), ref: Ref })

export const ErrorFrame = Type.Object({
  type: Type.Literal('error'),
  code: Type.String(),
  message: Type.String(),
  ref: Ref
})

export const ServerFrame = Type.Union([
  WelcomeFrame, EventFrame, SubscribedFrame, UnsubscribedFrame, TurnAcceptedFrame, ApprovalAckFrame,
  CancelAckFrame, SteerAckFrame, PongFrame, ErrorFrame, ToolResultAckFrame
], { title: 'ServerFrame' })
export type ServerFrame = Static<typeof ServerFrame>
