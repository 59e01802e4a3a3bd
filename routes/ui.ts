/** The browser client: a static page and its bundle, served with a strict Content-Security-Policy. */
import type { FastifyInstance } from 'fastify'
import { Type } from '@sinclair/typebox'
import { defaultPublicDir, loadUiAssets, UI_FILES, UI_SECURITY_HEADERS } from '../src/ui/assets.js'

export default async function uiRoutes (app: FastifyInstance): Promise<void> {
  if (!app.gateway.config.ui.enabled) return
  const assets = loadUiAssets(defaultPublicDir())
  for (const { path, type } of UI_FILES) {
    const asset = assets.get(path)
    if (asset === undefined) continue
    app.get(path, {
      schema: {
        summary: path === '/' ? 'Browser client page' : `Browser client asset ${path}`,
        produces: [type.split(';')[0] as string],
        response: { 200: Type.String(), 304: Type.Null() }
      }
    }, async (request, reply) => {
      void reply.headers(UI_SECURITY_HEADERS).header('etag', asset.etag)
      if (request.headers['if-none-match'] === asset.etag) return await reply.code(304).send()
      return await reply.type(asset.type).send(asset.body)
    })
  }
}
