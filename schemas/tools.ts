import { Type, type Static } from '@sinclair/typebox'

export const ToolsQuery = Type.Object({
  agent: Type.Optional(Type.String({ minLength: 1, maxLength: 64 }))
}, { additionalProperties: false })

export const ToolDescription = Type.Object({
  name: Type.String(),
  description: Type.String(),
  parameters: Type.Record(Type.String(), Type.Unknown()),
  provenance: Type.Union([Type.Literal('native'), Type.Literal('extension')]),
  source: Type.String(),
  approval: Type.Union([Type.Literal('prompt'), Type.Literal('approved'), Type.Literal('not_required')])
})

export const ToolList = Type.Object({
  agent: Type.String(),
  tools: Type.Array(ToolDescription)
}, { title: 'ToolList' })
export type ToolList = Static<typeof ToolList>
