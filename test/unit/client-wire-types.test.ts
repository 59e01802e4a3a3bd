/**
 * The client package carries its own copy of the wire types (the published package cannot import
 * the gateway's schemas/). These tests fail when that copy drifts: at run time against the
 * generator's output, and at compile time (`tsc`, run by `npm run typecheck` and CI) against the
 * schemas' Static types.
 */
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { readdir, readFile } from 'node:fs/promises'
import { join } from 'node:path'
import type { Static } from '@sinclair/typebox'
import type * as wire from '../../packages/client/src/wire.js'
import type { Problem } from '../../schemas/common.js'
import type { OperatorDecision } from '../../schemas/approval.js'
import type { ApprovalDecision, EventEnvelope, ToolCallStatus, ToolResultEvent, TurnEvent } from '../../schemas/events.js'
import type { EventsPage, Turn, TurnAccepted, TurnRequest, TurnStatus } from '../../schemas/turn.js'
import type { ClientFrame, ErrorFrame, ServerFrame, TurnAcceptedFrame } from '../../schemas/ws.js'
import { renderWireTypes, WIRE_SCHEMAS, WIRE_TYPES_PATH } from '../../scripts/wire-types.js'

/** True only when A and B are the same type (not merely assignable one way). */
type Equals<A, B> = (<T>() => T extends A ? 1 : 2) extends (<T>() => T extends B ? 1 : 2) ? true : false

// Compile-time: each line fails `tsc` if the generated type and the schema's Static differ.
const same: Array<true> = [
  true satisfies Equals<wire.ToolCallStatus, ToolCallStatus>,
  true satisfies Equals<wire.ApprovalDecision, ApprovalDecision>,
  true satisfies Equals<wire.OperatorDecision, OperatorDecision>,
  true satisfies Equals<wire.TurnStatus, TurnStatus>,
  true satisfies Equals<wire.ToolResultEvent, Static<typeof ToolResultEvent>>,
  true satisfies Equals<wire.TurnEvent, TurnEvent>,
  true satisfies Equals<wire.EventEnvelope, EventEnvelope>,
  true satisfies Equals<wire.TurnRequest, TurnRequest>,
  true satisfies Equals<wire.TurnAccepted, TurnAccepted>,
  true satisfies Equals<wire.Turn, Turn>,
  true satisfies Equals<wire.EventsPage, EventsPage>,
  true satisfies Equals<wire.Problem, Problem>,
  true satisfies Equals<wire.ClientFrame, ClientFrame>,
  true satisfies Equals<wire.ServerFrame, ServerFrame>,
  true satisfies Equals<wire.TurnAcceptedFrame, Static<typeof TurnAcceptedFrame>>,
  true satisfies Equals<wire.ErrorFrame, Static<typeof ErrorFrame>>
]

test('the client package\'s committed wire.ts is exactly what scripts/wire-types.ts generates from schemas/', async () => {
  assert.ok(same.every((s) => s))
  assert.equal(await readFile(WIRE_TYPES_PATH, 'utf8'), renderWireTypes(), 'packages/client/src/wire.ts is stale: run `npm run openapi`')
})

test('every generated wire type is exported under the name the gateway\'s schemas use', async () => {
  const text = await readFile(WIRE_TYPES_PATH, 'utf8')
  const exported = [...text.matchAll(/^export type (\w+) =/gm)].map((m) => m[1])
  assert.deepEqual(exported, WIRE_SCHEMAS.map(([name]) => name))
})

test('the client package\'s sources import nothing outside the package but the ws module', async () => {
  const dir = 'packages/client/src'
  for (const file of await readdir(dir)) {
    const source = await readFile(join(dir, file), 'utf8')
    for (const [, specifier] of source.matchAll(/^(?:import|export)\b[^'"]*?from '([^']+)'/gm)) {
      assert.ok(specifier?.startsWith('./') === true || specifier === 'ws', `${file} imports ${String(specifier)}`)
      assert.ok(!(specifier ?? '').includes('..'), `${file} reaches outside the package: ${String(specifier)}`)
    }
  }
})
