/**
 * openapi.yaml from the registered routes: the same TypeBox schemas fastify validates and
 * serializes with become the document's parameters, request bodies and responses. A route
 * without a schema is refused, so nothing the gateway answers goes undocumented.
 *
 * Besides what each route declares, the document describes the answers the server gives a route
 * because of what it is, from one place each in the server: 401/403 for an authenticated route,
 * 400/413/415 for a route with a body, 400 for parameters, 426 for a WebSocket route, 431 for any
 * request, `x-request-id` on every response and `Retry-After` on every 429.
 */
import { STATUS_CODES } from 'node:http'
import { stringify } from 'yaml'
import { Problem } from '../../schemas/common.js'
import type { RouteEntry } from './routes.js'
import { SchemaComponents, plainSchema, type JsonObject } from './schema.js'

const METHOD_ORDER = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']

export const API_VERSION = 'v1'

const PROBLEM_MEDIA_TYPE = 'application/problem+json'

const HEADERS: Readonly<Record<string, JsonObject>> = {
  RequestId: {
    description: 'The request\'s id: the caller\'s own `x-request-id` when it is 1-128 characters of `A-Za-z0-9._:-`, ' +
      'else one the gateway generated. It is the `reqId` of the request\'s log lines.',
    required: true,
    schema: { type: 'string', pattern: '^[A-Za-z0-9._:-]{1,128}$' }
  },
  RetryAfter: {
    description: 'Seconds to wait before retrying (a hint)',
    required: true,
    schema: { type: 'integer', minimum: 1 }
  },
  WwwAuthenticate: {
    description: 'RFC 6750 challenge: `Bearer realm="tollgate"`, with `error="invalid_token"` unless no token was sent',
    required: true,
    schema: { type: 'string' }
  }
}

interface StandardResponse { name: string, description: string, headers?: Record<string, string> }

/** Answers with the same meaning on every route that can give them, described once in components.responses. */
const STANDARD: Readonly<Record<string, StandardResponse>> = {
  400: {
    name: 'BadRequest',
    description: 'The request does not match the schema (`INVALID_REQUEST`; `detail` names the field, e.g. a bad `after_seq`), ' +
      'the body is not JSON (`INVALID_JSON`), or another 400 code of the route (`UNKNOWN_AGENT`, `UNKNOWN_TOOL`, ' +
      '`CONNECTION_NOT_FOUND`, `INVALID_DECISION`)'
  },
  401: {
    name: 'Unauthorized',
    description: 'No valid credentials: `UNAUTHENTICATED`, `TOKEN_INVALID` (`detail` names the failed check) or `TOKEN_EXPIRED`',
    headers: { 'WWW-Authenticate': 'WwwAuthenticate' }
  },
  403: {
    name: 'Forbidden',
    description: '`FORBIDDEN`: the token lacks the route\'s scope (with `WWW-Authenticate: Bearer … error="insufficient_scope"`), ' +
      'or the session belongs to another principal of the caller\'s tenant; `AGENT_FORBIDDEN`: the agent (named, or the ' +
      'session\'s) is outside the caller\'s reach (`agents.<name>.access`); `ORIGIN_NOT_ALLOWED`: a WebSocket upgrade from an ' +
      'Origin that is neither the gateway\'s nor in `ws.allowed_origins`'
  },
  404: {
    name: 'NotFound',
    description: 'No such turn, session or approval request, or one of another principal (`TURN_NOT_FOUND`, ' +
      '`SESSION_NOT_FOUND`, `APPROVAL_NOT_FOUND`). A path or method this document does not list answers `NOT_FOUND`.'
  },
  413: { name: 'PayloadTooLarge', description: 'The body exceeds `server.body_limit_bytes` (`PAYLOAD_TOO_LARGE`)' },
  415: { name: 'UnsupportedMediaType', description: 'The body is not `application/json` (`UNSUPPORTED_MEDIA_TYPE`)' },
  426: {
    name: 'UpgradeRequired',
    description: 'A plain HTTP request to a WebSocket route (`UPGRADE_REQUIRED`); the answer carries `Upgrade: websocket`'
  },
  429: {
    name: 'TooManyRequests',
    description: 'A limit of the caller was reached (`TOO_MANY_TURNS`: running turns per principal or per process)',
    headers: { 'Retry-After': 'RetryAfter' }
  },
  431: {
    name: 'HeadersTooLarge',
    description: 'The request headers exceed Node\'s 16 KiB limit (`HEADERS_TOO_LARGE`). Answered before routing, for any path.'
  },
  default: {
    name: 'Error',
    description: 'Any other failure, as problem JSON with a stable `code` (e.g. 500 `INTERNAL`, 503 `AUTH_UNAVAILABLE`)'
  }
}

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

function hasProperties (schema: unknown): boolean {
  return schema !== undefined && Object.keys((plainSchema(schema).properties ?? {}) as JsonObject).length > 0
}

function parameters (schema: unknown, where: 'path' | 'query' | 'header', components: SchemaComponents): JsonObject[] {
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

function headerRefs (names: Record<string, string>): JsonObject {
  return Object.fromEntries(Object.entries(names).map(([header, component]) => [header, { $ref: `#/components/headers/${component}` }]))
}

/** The statuses a route answers because of what it is, whatever its own schema says. */
function inherentStatuses (route: RouteEntry): string[] {
  const schema = route.schema ?? {}
  const statuses = ['431', 'default']
  if (needsAuth(route.url)) statuses.push('401', '403')
  if (schema.body !== undefined) statuses.push('400', '413', '415')
  if (hasProperties(schema.params) || hasProperties(schema.querystring)) statuses.push('400')
  if (route.websocket) statuses.push('426')
  return statuses
}

/**
 * A declared response: a schema (served as JSON, or as the route's `produces` type), or fastify's
 * `{ description?, headers?, content: { <media type>: { schema } } }` for several media types.
 */
function declaredResponse (status: string, declared: unknown, produces: string | undefined, components: SchemaComponents): JsonObject {
  const headers = { 'x-request-id': { $ref: '#/components/headers/RequestId' } }
  const entry = declared as JsonObject
  if (typeof entry.content === 'object' && entry.content !== null) {
    const content = Object.fromEntries(Object.entries(entry.content as Record<string, JsonObject>)
      .map(([media, { schema }]) => [media, { schema: components.use(schema) }]))
    const extra = Object.fromEntries(Object.entries((entry.headers ?? {}) as Record<string, JsonObject>)
      .map(([name, header]) => [name, { ...header, schema: components.use(header.schema) }]))
    return { description: entry.description ?? STATUS_CODES[Number(status)] ?? status, headers: { ...headers, ...extra }, content }
  }
  const schema = plainSchema(declared)
  const description = STATUS_CODES[Number(status)] ?? status
  if (schema.type === 'null') return { description, headers }
  const media = schema.title === 'Problem' ? PROBLEM_MEDIA_TYPE : produces ?? 'application/json'
  return { description, headers, content: { [media]: { schema: components.use(declared) } } }
}

function responses (route: RouteEntry, components: SchemaComponents): JsonObject {
  const out: Record<string, JsonObject> = {}
  if (route.websocket) {
    out['101'] = {
      description: 'Switching Protocols: a WebSocket speaking the `tollgate.v1` subprotocol; its frames are described in asyncapi.yaml',
      headers: { 'x-request-id': { $ref: '#/components/headers/RequestId' } }
    }
  }
  const produces = Array.isArray(route.schema?.produces) ? String(route.schema.produces[0]) : undefined
  const declared = (route.schema?.response ?? {}) as Record<string, unknown>
  for (const [status, schema] of Object.entries(declared)) {
    const standard = STANDARD[status]
    out[status] = standard !== undefined && plainSchema(schema).title === 'Problem'
      ? { $ref: `#/components/responses/${standard.name}` }
      : declaredResponse(status, schema, produces, components)
  }
  for (const status of inherentStatuses(route)) {
    const standard = STANDARD[status]
    if (standard !== undefined) out[status] ??= { $ref: `#/components/responses/${standard.name}` }
  }
  const order = (s: string): number => (s === 'default' ? 1000 : Number(s))
  return Object.fromEntries(Object.keys(out).sort((a, b) => order(a) - order(b)).map((s) => [s, out[s]]))
}

function operation (route: RouteEntry, components: SchemaComponents): JsonObject {
  const schema = route.schema ?? {}
  const op: JsonObject = { operationId: operationId(route.method, route.url) }
  if (typeof schema.summary === 'string') op.summary = schema.summary
  if (typeof schema.description === 'string') op.description = schema.description
  const params = [
    ...parameters(schema.params, 'path', components),
    ...parameters(schema.querystring, 'query', components),
    ...parameters(schema.headers, 'header', components)
  ]
  if (params.length > 0) op.parameters = params
  if (schema.body !== undefined) op.requestBody = { required: true, content: { 'application/json': { schema: components.use(schema.body) } } }
  op.responses = responses(route, components)
  op.security = needsAuth(route.url) ? [{ bearer: [] }] : []
  return op
}

function standardResponses (components: SchemaComponents): JsonObject {
  const problem = components.use(Problem)
  const out: JsonObject = {}
  for (const { name, description, headers } of Object.values(STANDARD)) {
    out[name] = {
      description,
      headers: headerRefs({ 'x-request-id': 'RequestId', ...headers }),
      content: { [PROBLEM_MEDIA_TYPE]: { schema: problem } }
    }
  }
  return out
}

export function buildOpenApi (routes: readonly RouteEntry[]): JsonObject {
  const components = new SchemaComponents('#/components/schemas/')
  const byPath = new Map<string, Map<string, JsonObject>>()
  const byMethod = (a: typeof routes[number], b: typeof routes[number]): number =>
    METHOD_ORDER.indexOf(a.method) - METHOD_ORDER.indexOf(b.method)
  const sorted = [...routes].sort((a, b) => (a.url === b.url ? byMethod(a, b) : a.url < b.url ? -1 : 1))
  for (const route of sorted) {
    // Hidden plumbing of a plugin (the CORS preflight catch-all) is not API; @fastify/websocket hides its routes too, but they are.
    if (route.schema?.hide === true && !route.websocket) continue
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
  const responsesComponent = standardResponses(components)
  return {
    openapi: '3.1.0',
    info: {
      title: 'Tollgate',
      version: API_VERSION,
      description: 'Gateway that runs AI-agent turns: tool loop, approvals, cancellation. Errors are problem JSON ' +
        '`{type, title, status, code, detail?}` with a stable `code`; any path or method not listed here answers 404 `NOT_FOUND`. ' +
        'Generated from the route schemas by `npm run openapi`; WebSocket frames are in asyncapi.yaml.',
      license: { name: 'Apache-2.0', identifier: 'Apache-2.0' }
    },
    servers: [{ url: 'http://127.0.0.1:8080', description: 'A gateway started with its defaults (`npm start`); use your deployment\'s' }],
    paths,
    components: {
      securitySchemes: { bearer: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT' } },
      headers: HEADERS,
      responses: responsesComponent,
      schemas: components.entries()
    }
  }
}

export function toYaml (document: JsonObject): string {
  return stringify(document, { lineWidth: 0, aliasDuplicateObjects: false })
}
