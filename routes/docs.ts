/** GET /docs: the API reference page (Redoc over /openapi.yaml) and its two scripts. */
import type { FastifyInstance } from 'fastify'
import { Type } from '@sinclair/typebox'
import { defaultPublicDir } from '../src/ui/assets.js'
import { API_DOCS_FILES, API_DOCS_SECURITY_HEADERS, loadApiDocsAssets } from '../src/ui/api-docs.js'

export default async function apiDocsRoutes (app: FastifyInstance): Promise<void> {
  if (!app.gateway.config.ui.enabled) return
  const assets = loadApiDocsAssets(defaultPublicDir())
  for (const { path, type } of API_DOCS_FILES) {
    const asset = assets.get(path)
    if (asset === undefined) continue
    app.get(path, {
      schema: {
        summary: path === '/docs' ? 'API reference page (Redoc over /openapi.yaml)' : `API reference page asset ${path}`,
        produces: [type.split(';')[0] as string],
        response: { 200: Type.String(), 304: Type.Null() }
      }
    }, async (request, reply) => {
      void reply.headers(API_DOCS_SECURITY_HEADERS).header('etag', asset.etag)
      if (request.headers['if-none-match'] === asset.etag) return await reply.code(304).send()
      return await reply.type(asset.type).send(asset.body)
    })
  }
}
