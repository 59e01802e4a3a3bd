/**
 * docker-compose.yml cannot be run here (no Docker engine), so it is checked statically: its
 * services, a loopback-only port, and that the gateway's config, read with the environment the
 * compose file gives it, loads and accepts the development token docs/guides/docker.md prints.
 */
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { readFile } from 'node:fs/promises'
import { fileURLToPath } from 'node:url'
import { parse } from 'yaml'
import { loadConfig } from '../../src/core/config.js'
import { createAuthenticator } from '../../src/auth/authenticate.js'

const REPO = fileURLToPath(new URL('../..', import.meta.url))

interface Service {
  build?: string
  image?: string
  ports?: string[]
  environment?: Record<string, string>
  volumes?: string[]
  depends_on?: Record<string, { condition: string }>
}

async function compose (): Promise<Record<string, Service>> {
  return (parse(await readFile(`${REPO}docker-compose.yml`, 'utf8')) as { services: Record<string, Service> }).services
}

test('docker compose runs the gateway image with PostgreSQL and Redis, waits for both, and publishes on the host loopback only', async () => {
  const services = await compose()
  assert.deepEqual(Object.keys(services).sort(), ['gateway', 'postgres', 'redis'])
  const gateway = services.gateway
  assert.equal(gateway?.build, '.')
  assert.deepEqual(gateway?.ports, ['127.0.0.1:8080:8080'])
  assert.deepEqual(gateway?.depends_on, { postgres: { condition: 'service_healthy' }, redis: { condition: 'service_healthy' } })
  const env = gateway?.environment ?? {}
  const postgres = services.postgres?.environment ?? {}
  assert.equal(env.TOLLGATE_DATABASE_URL, `postgres://${postgres.POSTGRES_USER}:${postgres.POSTGRES_PASSWORD}@postgres:5432/${postgres.POSTGRES_DB}`)
  assert.equal(env.TOLLGATE_REDIS_URL, 'redis://redis:6379')
  assert.ok(gateway?.volumes?.includes(`./deploy/compose/tollgate.toml:${env.TOLLGATE_CONFIG}:ro`))
})

test('the compose config loads with the compose environment and accepts the documented development token', async () => {
  const env = (await compose()).gateway?.environment ?? {}
  const config = loadConfig({ file: `${REPO}deploy/compose/tollgate.toml`, env: { ...env, TOLLGATE_HOST: '0.0.0.0' } })
  assert.deepEqual([config.store.kind, config.store.postgres.url_env, config.bus.kind, config.bus.redis.url_env],
    ['postgres', 'TOLLGATE_DATABASE_URL', 'redis', 'TOLLGATE_REDIS_URL'])
  const guide = await readFile(`${REPO}docs/guides/docker.md`, 'utf8')
  const token = /```text\n(eyJ[\w-]+\.[\w-]+\.[\w-]+)\n```/.exec(guide)?.[1]
  assert.ok(token !== undefined, 'the guide prints the development token')
  const auth = createAuthenticator(config, env)
  const principal = await auth.authenticate({ authorization: `Bearer ${token}` })
  await auth.close()
  assert.deepEqual([principal.tenant, principal.sub, [...principal.scopes].sort()], ['dev', 'developer', ['approvals:answer', 'turns:read', 'turns:write']])
})
