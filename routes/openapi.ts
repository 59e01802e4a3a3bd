/** GET /openapi.yaml and /asyncapi.yaml: the API documents, built from the live routes and schemas. */
import type { FastifyInstance } from 'fastify'
import { Type } from '@sinclair/typebox'
import { buildAsyncApi } from '../src/openapi/asyncapi.js'
import { buildOpenApi, toYaml } from '../src/openapi/openapi.js'

const YAML_TYPE = 'application/yaml; charset=utf-8'

export default async function openapiRoutes (app: FastifyInstance): Promise<void> {
  const catalog = app.routeCatalog
  // Built on first request: by then every route of the app is registered.
  let openapi: string | null = null
  let asyncapi: string | null = null
  app.get('/openapi.yaml', {
    schema: { summary: 'This OpenAPI document', produces: ['application/yaml'], response: { 200: Type.String() } }
  }, async (_request, reply) => {
    openapi ??= toYaml(buildOpenApi(catalog.list()))
    return await reply.type(YAML_TYPE).send(openapi)
  })
  app.get('/asyncapi.yaml', {
    schema: { summary: 'The AsyncAPI document of the WebSocket frames', produces: ['application/yaml'], response: { 200: Type.String() } }
  }, async (_request, reply) => {
    asyncapi ??= toYaml(buildAsyncApi())
    return await reply.type(YAML_TYPE).send(asyncapi)
  })
}
