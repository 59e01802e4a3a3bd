/**
 * openapi.yaml from the registered routes: the same TypeBox schemas fastify validates and
 * serializes with become the document's parameters, request bodies and responses. A route
 * without a schema is refused, so nothing the gateway answers goes undocumented.
 */
import { STATUS_CODES } from 'node:http'
import { stringify } from 'yaml'
import type { RouteEntry } from './routes.js'
import { SchemaComponents, plainSchema, type JsonObject } from './schema.js'

const METHOD_ORDER = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']

export const API_VERSION = 'v1'

/** Matches the wire contract: everything under /v1 needs a principal; health, docs and the page do not. */
function needsAuth (url: string): boolean {
  return url.startsWith('/v1/')
}

function openApiPath (url: string): string {
  return url.replace(/:([A-Za-z0-9_]+)/g, '{$1}')
}

function operationId (method: string, url: string): string {
  const words = url.split(/[^A-Za-z0-9]+/).filter((w) => w !== '')
  const tail = words.map((w) => `${w.charAt(0).toUpperCase()}${w.slice(1)}`).join('')
  return `${method.toLowerCase()}${tail === '' ? 'Root' : tail}`
}

function parameters (schema: unknown, where: 'path' | 'query', components: SchemaComponents): JsonObject[] {
  if (schema === undefined) return []
  const plain = plainSchema(schema)
  const props = (plain.properties ?? {}) as Record<string, unknown>
  const required = new Set((plain.required ?? []) as string[])
  return Object.entries(props).map(([name, prop]) => ({
    name,
    in: where,
    required: where === 'path' || required.has(name),
    ...(typeof (prop as JsonObject).description === 'string' ? { description: (prop as JsonObject).description } : {}),
    schema: components.use(prop)
  }))
}

function responseContentType (schema: JsonObject, produces: string | undefined): string {
  if (schema.title === 'Problem') return 'application/problem+json'
  return produces ?? 'application/json'
}

function responses (route: RouteEntry, components: SchemaComponents): JsonObject {
  const out: JsonObject = {}
  if (route.websocket) {
    out['101'] = { description: 'Switching Protocols: a WebSocket speaking the `tollgate.v1` subprotocol; its frames are described in asyncapi.yaml' }
  }
  const produces = Array.isArray(route.schema?.produces) ? String(route.schema.produces[0]) : undefined
  const declared = (route.schema?.response ?? {}) as Record<string, unknown>
  for (const status of Object.keys(declared).sort()) {
    const schema = plainSchema(declared[status])
    const description = STATUS_CODES[Number(status)] ?? status
    out[status] = schema.type === 'null'
      ? { description }
      : { description, content: { [responseContentType(schema, produces)]: { schema: components.use(declared[status]) } } }
  }
  return out
}

function operation (route: RouteEntry, components: SchemaComponents): JsonObject {
  const schema = route.schema ?? {}
  const op: JsonObject = { operationId: operationId(route.method, route.url) }
  if (typeof schema.summary === 'string') op.summary = schema.summary
  if (typeof schema.description === 'string') op.description = schema.description
  const params = [...parameters(schema.params, 'path', components), ...parameters(schema.querystring, 'query', components)]
  if (params.length > 0) op.parameters = params
  if (schema.body !== undefined) op.requestBody = { required: true, content: { 'application/json': { schema: components.use(schema.body) } } }
  op.responses = responses(route, components)
  if (needsAuth(route.url)) op.security = [{ bearer: [] }]
  return op
}

export function buildOpenApi (routes: readonly RouteEntry[]): JsonObject {
  const components = new SchemaComponents('#/components/schemas/')
  const byPath = new Map<string, Map<string, JsonObject>>()
  const sorted = [...routes].sort((a, b) => (a.url === b.url ? METHOD_ORDER.indexOf(a.method) - METHOD_ORDER.indexOf(b.method) : a.url < b.url ? -1 : 1))
  for (const route of sorted) {
    if (route.schema === undefined && !route.websocket) throw new Error(`route ${route.method} ${route.url} has no schema: every route must declare one`)
    const path = openApiPath(route.url)
    let methods = byPath.get(path)
    if (methods === undefined) {
      methods = new Map()
      byPath.set(path, methods)
    }
    methods.set(route.method.toLowerCase(), operation(route, components))
  }
  const paths: JsonObject = {}
  for (const [path, methods] of byPath) paths[path] = Object.fromEntries(methods)
  return {
    openapi: '3.1.0',
    info: {
      title: 'Tollgate',
      version: API_VERSION,
      description: 'Gateway that runs AI-agent turns: tool loop, approvals, cancellation. Generated from the route schemas by `npm run openapi`; WebSocket frames are in asyncapi.yaml.'
    },
    paths,
    components: {
      securitySchemes: { bearer: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT' } },
      schemas: components.entries()
    }
  }
}

export function toYaml (document: JsonObject): string {
  return stringify(document, { lineWidth: 0, aliasDuplicateObjects: false })
}
