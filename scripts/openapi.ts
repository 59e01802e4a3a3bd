/**
 * `npm run openapi`: writes everything generated from schemas/: openapi.yaml (every HTTP route,
 * from the route schemas) and asyncapi.yaml (WebSocket frames, from schemas/ws.ts) as the gateway
 * itself would serve them, the client package's wire types (packages/client/src/wire.ts), and the
 * configuration and error references (docs/reference/, see scripts/docs-reference.ts).
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { loadConfig } from '../src/core/config.js'
import { buildServer } from '../src/app/server.js'
import { buildAsyncApi } from '../src/openapi/asyncapi.js'
import { buildOpenApi, toYaml } from '../src/openapi/openapi.js'
import { renderWireTypes, WIRE_TYPES_PATH } from './wire-types.js'
import { writeReferences } from './docs-reference.js'

export async function renderApiDocuments (): Promise<{ openapi: string, asyncapi: string }> {
  const workspace = await mkdtemp(join(tmpdir(), 'tollgate-openapi-'))
  const gateway = await buildServer({ config: loadConfig({ env: {}, overrides: { log: { level: 'silent' }, workspace: { dir: workspace }, store: { kind: 'memory' } } }), env: {} })
  try {
    await gateway.app.ready()
    return { openapi: toYaml(buildOpenApi(gateway.app.routeCatalog.list())), asyncapi: toYaml(buildAsyncApi()) }
  } finally {
    await gateway.close()
    await rm(workspace, { recursive: true, force: true })
  }
}

if (import.meta.url === `file://${process.argv[1] ?? ''}`) {
  const { openapi, asyncapi } = await renderApiDocuments()
  await writeFile(new URL('../openapi.yaml', import.meta.url), openapi)
  await writeFile(new URL('../asyncapi.yaml', import.meta.url), asyncapi)
  await writeFile(WIRE_TYPES_PATH, renderWireTypes())
  await writeReferences()
  console.log('wrote openapi.yaml, asyncapi.yaml, packages/client/src/wire.ts, docs/reference/configuration.md and docs/reference/errors.md')
}
