/**
 * The context a tool call gets: its lazy members work (a child logger bound to the call, the
 * workspace folder), a spread copies them, and every call's context shares one fast hidden class —
 * a getter closure per context (an object literal with `get log ()`) kept whole turns alive
 * through young-generation GCs (src/core/lazy-properties.ts).
 */
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { defineTool, ok, type ToolContext } from '../../src/tools/contract.js'
import { startGateway } from '../helpers/gateway.js'
import { haveSameMap, hasFastProperties } from '../helpers/v8-shape.js'

test('every tool call gets a context of one fast shape whose log and workspace folder are made when read', async (t) => {
  const seen: ToolContext[] = []
  const bindings: Array<Record<string, unknown>> = []
  const folders: string[] = []
  const capture = defineTool<{ n: number }>({
    name: 'ctx_capture',
    description: 'records the context it was called with',
    parameters: { type: 'object', properties: { n: { type: 'integer' } }, required: ['n'], additionalProperties: false },
    async execute (args, ctx) {
      seen.push(ctx)
      if (args.n === 1) {
        bindings.push(ctx.log.bindings())
        folders.push({ ...ctx }.workspaceDir)
      }
      return ok(`seen ${args.n}`)
    }
  })
  const g = await startGateway({
    tools: [capture],
    overrides: { agents: { default: { tools: ['ctx_capture'] } }, risk_profiles: { default: { auto_approve: ['ctx_capture'] } } }
  })
  t.after(async () => { await g.close() })
  for (let turn = 0; turn < 2; turn++) {
    g.provider.enqueue(
      { toolCalls: [{ id: `a${turn}`, name: 'ctx_capture', arguments: { n: 1 } }, { id: `b${turn}`, name: 'ctx_capture', arguments: { n: 2 } }] },
      { text: 'done' }
    )
    const done = await g.http('POST', '/v1/turns?wait=true', { message: 'capture', interactive: false })
    assert.equal(done.body.status, 'completed')
  }
  assert.equal(seen.length, 4)
  for (const ctx of seen) {
    assert.equal(hasFastProperties(ctx), true)
    assert.equal(haveSameMap(ctx, seen[0] as ToolContext), true)
  }
  assert.equal(bindings.length, 2)
  for (const b of bindings) assert.equal(b.tool, 'ctx_capture')
  assert.notEqual(bindings[0]?.call_id, bindings[1]?.call_id)
  for (const folder of folders) assert.ok(typeof folder === 'string' && folder.length > 0, `workspace folder: ${String(folder)}`)
})
