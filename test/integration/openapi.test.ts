import { test } from 'node:test'
import assert from 'node:assert/strict'
import { readFile } from 'node:fs/promises'
import { parse } from 'yaml'
import { ClientFrameSchemas, ServerFrame } from '../../schemas/ws.js'
import { buildAsyncApi } from '../../src/openapi/asyncapi.js'
import { buildOpenApi, toYaml } from '../../src/openapi/openapi.js'
import { plainSchema } from '../../src/openapi/schema.js'
import { startGateway, type TestGateway } from '../helpers/gateway.js'

type Json = Record<string, any>

async function setup (t: { after: (fn: () => Promise<void>) => void }): Promise<TestGateway> {
  const g = await startGateway()
  t.after(async () => { await g.close() })
  return g
}

/** Inlines every $ref, so a documented schema can be compared with the route's own. */
function deref (node: unknown, doc: Json): unknown {
  if (Array.isArray(node)) return node.map((n) => deref(n, doc))
  if (typeof node !== 'object' || node === null) return node
  const ref = (node as Json).$ref
  if (typeof ref === 'string') {
    const target = ref.slice(2).split('/').reduce<any>((at, key) => at?.[key], doc)
    assert.ok(target !== undefined, `dangling $ref ${ref}`)
    return deref(target, doc)
  }
  return Object.fromEntries(Object.entries(node).map(([k, v]) => [k, deref(v, doc)]))
}

test('the committed openapi.yaml is exactly the document the live gateway generates and serves', async (t) => {
  const g = await setup(t)
  const committed = await readFile('openapi.yaml', 'utf8')
  assert.equal(toYaml(buildOpenApi(g.gateway.app.routeCatalog.list())), committed, 'openapi.yaml is stale: run `npm run openapi`')
  const res = await fetch(`${g.url}/openapi.yaml`)
  assert.equal(res.status, 200)
  assert.match(String(res.headers.get('content-type')), /^application\/yaml/)
  assert.equal(await res.text(), committed)
})

test('every registered route is in openapi.yaml with the very schemas it validates and answers with', async (t) => {
  const g = await setup(t)
  const doc = parse(await readFile('openapi.yaml', 'utf8')) as Json
  const routes = g.gateway.app.routeCatalog.list()
  assert.ok(routes.length >= 12, 'the catalog saw the routes')
  for (const route of routes) {
    const where = `${route.method} ${route.url}`
    const op = doc.paths[route.url.replace(/:(\w+)/g, '{$1}')]?.[route.method.toLowerCase()] as Json | undefined
    assert.ok(op !== undefined, `${where} is missing from openapi.yaml`)
    const schema = (route.schema ?? {}) as Json
    if (!route.websocket) assert.ok(route.schema !== undefined, `${where} has no schema`)
    if (schema.body !== undefined) {
      assert.deepEqual(deref(op.requestBody.content['application/json'].schema, doc), plainSchema(schema.body), `${where} body`)
    } else {
      assert.equal(op.requestBody, undefined, `${where} documents a body it does not take`)
    }
    for (const [part, where2] of [['params', 'path'], ['querystring', 'query']] as const) {
      const documented: Json[] = (op.parameters ?? []).filter((p: Json) => p.in === where2)
      const props: Json = plainSchema(schema[part] ?? {}).properties ?? {}
      assert.deepEqual(documented.map((p: Json) => p.name).sort(), Object.keys(props).sort(), `${where} ${part} names`)
      for (const p of documented) assert.deepEqual(deref(p.schema, doc), props[p.name], `${where} ${part} ${String(p.name)}`)
    }
    const declared = (schema.response ?? {}) as Json
    const documentedStatuses = Object.keys(op.responses).filter((s) => s !== '101')
    for (const status of Object.keys(declared)) assert.ok(documentedStatuses.includes(status), `${where} documents its declared ${status}`)
    for (const status of documentedStatuses.filter((s) => !(s in declared))) {
      assert.match(op.responses[status].$ref ?? '', /^#\/components\/responses\//, `${where} ${status} is one of the shared answers`)
    }
    for (const [status, responseSchema] of Object.entries(declared)) {
      const documented = deref(op.responses[status], doc) as Json
      assert.ok('x-request-id' in documented.headers, `${where} ${status} documents x-request-id`)
      const byMedia: Json = (responseSchema as Json).content ?? { any: { schema: responseSchema } }
      for (const [media, { schema: declaredSchema }] of Object.entries(byMedia) as Array<[string, Json]>) {
        const plain = plainSchema(declaredSchema)
        if (plain.type === 'null') continue
        const content = documented.content as Json
        assert.deepEqual(media === 'any' ? Object.values(content)[0]?.schema : content[media]?.schema, plain, `${where} ${status} ${media}`)
      }
    }
    assert.deepEqual(op.security, route.url.startsWith('/v1/') ? [{ bearer: [] }] : [], `${where} security`)
  }
})

test('the generator refuses a route that declares no schema', () => {
  assert.throws(() => buildOpenApi([{ method: 'GET', url: '/undocumented', schema: undefined, websocket: false }]), /GET \/undocumented has no schema/)
})

test('the committed asyncapi.yaml is what the gateway serves and describes every WebSocket frame with its schema', async (t) => {
  const g = await setup(t)
  const committed = await readFile('asyncapi.yaml', 'utf8')
  assert.equal(toYaml(buildAsyncApi()), committed, 'asyncapi.yaml is stale: run `npm run openapi`')
  assert.equal(await (await fetch(`${g.url}/asyncapi.yaml`)).text(), committed)
  const doc = parse(committed) as Json
  assert.equal(doc.asyncapi, '3.0.0')
  for (const [name, schema] of Object.entries(ClientFrameSchemas)) {
    assert.deepEqual(deref(doc.components.messages[name]?.payload, doc), plainSchema(schema), `client frame ${name}`)
    const op = Object.values(doc.operations as Json).find((o: Json) => o.action === 'receive' && o.messages[0].$ref.endsWith(`/${name}`)) as Json | undefined
    assert.ok(op !== undefined, `no operation receives ${name}`)
    assert.equal(op.reply.messages.length, 2)
  }
  for (const schema of ServerFrame.anyOf) {
    const name = (plainSchema(schema) as Json).properties.type.const as string
    assert.deepEqual(deref(doc.components.messages[name]?.payload, doc), plainSchema(schema), `server frame ${name}`)
  }
})
