import { test } from 'node:test'
import assert from 'node:assert/strict'
import { createServer, connect, type Server, type Socket } from 'node:net'
import { startGateway } from '../helpers/gateway.js'
import { deferrer, scratchPrefix, scratchSchema, startPrivateRedis } from '../helpers/services.js'
import { eventually } from '../helpers/eventually.js'

/** A TCP relay in front of the real PostgreSQL that a test can cut and restore: a network fault. */
async function relayToPostgres (): Promise<{ port: number, cut: () => void, restore: () => void, close: () => Promise<void> }> {
  const open = new Set<Socket>()
  let cut = false
  const server: Server = createServer((client) => {
    if (cut) {
      client.destroy()
      return
    }
    const upstream = connect(5432, '127.0.0.1')
    open.add(client)
    open.add(upstream)
    client.on('close', () => { open.delete(client); upstream.destroy() })
    upstream.on('close', () => { open.delete(upstream); client.destroy() })
    client.on('error', () => {})
    upstream.on('error', () => {})
    client.pipe(upstream)
    upstream.pipe(client)
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return {
    port: (server.address() as { port: number }).port,
    cut: () => {
      cut = true
      for (const s of open) s.destroy()
    },
    restore: () => { cut = false },
    close: async () => {
      for (const s of open) s.destroy()
      await new Promise<void>((resolve) => server.close(() => resolve()))
    }
  }
}

async function readiness (url: string): Promise<{ status: number, body: { status: string } }> {
  const res = await fetch(`${url}/readyz`)
  return { status: res.status, body: await res.json() as { status: string } }
}

test('/readyz answers 503 store_unavailable once the store refuses lease renewals for a lease time, and recovers with it', async (t) => {
  const defer = deferrer(t)
  const relay = await relayToPostgres()
  defer(relay.close)
  const schema = scratchSchema(defer)
  const g = await startGateway({
    overrides: {
      store: { kind: 'postgres', postgres: { url: `postgres://postgres@127.0.0.1:${relay.port}/test`, schema, connect_timeout_ms: 500 } },
      cluster: { lease_ms: 1000 }
    }
  })
  defer(async () => { await g.close() })
  assert.deepEqual(await readiness(g.url), { status: 200, body: { status: 'ready' } })

  relay.cut()
  await eventually(async () => (await readiness(g.url)).status === 503, { what: 'readiness to drop' })
  assert.deepEqual((await readiness(g.url)).body, { status: 'store_unavailable' })
  assert.equal((await fetch(`${g.url}/healthz`)).status, 200, 'still alive: only not ready')

  relay.restore()
  await eventually(async () => (await readiness(g.url)).status === 200, { what: 'readiness to come back' })
})

test('/readyz answers 503 bus_unavailable once Redis is unreachable for bus.redis.unready_after_ms, and recovers with it', async (t) => {
  const defer = deferrer(t)
  const redis = await startPrivateRedis(defer)
  const g = await startGateway({
    overrides: {
      bus: { kind: 'redis', redis: { url: redis.url, key_prefix: scratchPrefix(defer, redis.url), unready_after_ms: 500, connect_timeout_ms: 500 } }
    }
  })
  defer(async () => { await g.close() })
  assert.deepEqual(await readiness(g.url), { status: 200, body: { status: 'ready' } })

  await redis.stop()
  const stoppedAt = Date.now()
  await eventually(async () => (await readiness(g.url)).status === 503, { what: 'readiness to drop' })
  assert.ok(Date.now() - stoppedAt >= 500, 'not before unready_after_ms')
  assert.deepEqual((await readiness(g.url)).body, { status: 'bus_unavailable' })
  assert.equal((await fetch(`${g.url}/healthz`)).status, 200, 'still alive: only not ready')

  await redis.start()
  await eventually(async () => (await readiness(g.url)).status === 200, { what: 'readiness to come back' })
  assert.deepEqual((await readiness(g.url)).body, { status: 'ready' })
})

test('a Redis outage shorter than bus.redis.unready_after_ms leaves the gateway ready', async (t) => {
  const defer = deferrer(t)
  const redis = await startPrivateRedis(defer)
  const g = await startGateway({
    overrides: { bus: { kind: 'redis', redis: { url: redis.url, key_prefix: scratchPrefix(defer, redis.url), unready_after_ms: 60_000 } } }
  })
  defer(async () => { await g.close() })
  await redis.stop()
  await eventually(async () => g.gateway.bus.unreachableSince() !== null, { what: 'the bus to notice the outage' })
  assert.deepEqual(await readiness(g.url), { status: 200, body: { status: 'ready' } })
  await redis.start()
  await eventually(async () => g.gateway.bus.unreachableSince() === null, { what: 'the bus to reconnect' })
})
