/**
 * Every route the app registers, with the options it was registered with (schemas included),
 * recorded by an onRoute hook installed before any route plugin. The API documents are built
 * from this list, so a route cannot exist without appearing in them.
 */
import type { FastifyInstance, FastifySchema } from 'fastify'

export interface RouteEntry {
  method: string
  url: string
  schema: (FastifySchema & Record<string, unknown>) | undefined
  websocket: boolean
}

export class RouteCatalog {
  private readonly entries: RouteEntry[] = []

  add (entry: RouteEntry): void {
    this.entries.push(entry)
  }

  list (): readonly RouteEntry[] {
    return this.entries
  }
}

declare module 'fastify' {
  interface FastifyInstance {
    routeCatalog: RouteCatalog
  }
}

export function collectRoutes (app: FastifyInstance): RouteCatalog {
  const catalog = new RouteCatalog()
  app.addHook('onRoute', (route) => {
    const methods = Array.isArray(route.method) ? route.method : [route.method]
    for (const method of methods) {
      // fastify adds a HEAD twin to every GET; it answers like the GET and is not documented twice.
      if (method === 'HEAD') continue
      catalog.add({
        method,
        url: route.url,
        schema: route.schema as RouteEntry['schema'],
        websocket: (route as { websocket?: boolean }).websocket === true
      })
    }
  })
  app.decorate('routeCatalog', catalog)
  return catalog
}
