/**
 * The real PostgreSQL and Redis servers the persistence tests use (started by .ci/run), with a
 * scratch schema / key prefix per test so tests never see each other's data, and a private
 * redis-server for tests that restart Redis (the shared one serves other tests meanwhile).
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { once } from 'node:events'
import { createServer } from 'node:net'
import type { TestContext } from 'node:test'
import { Redis } from 'ioredis'
import pg from 'pg'

export const PG_URL = process.env.TOLLGATE_TEST_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test'
export const REDIS_URL = process.env.TOLLGATE_TEST_REDIS_URL ?? 'redis://127.0.0.1:6379'

export type Defer = (cleanup: () => Promise<void>) => void

/** Cleanups run last-registered first (a process before its database) by `run`. */
export function cleanupStack (): { defer: Defer, run: () => Promise<void> } {
  const stack: Array<() => Promise<void>> = []
  return {
    defer: (cleanup) => { stack.push(cleanup) },
    run: async () => {
      for (const cleanup of stack.splice(0).reverse()) await cleanup()
    }
  }
}

/** A cleanup stack that runs when the test ends. */
export function deferrer (t: TestContext): Defer {
  const { defer, run } = cleanupStack()
  t.after(run)
  return defer
}

function token (): string {
  return randomBytes(6).toString('hex')
}

/** A fresh PostgreSQL schema name, dropped when the test ends. */
export function scratchSchema (defer: Defer): string {
  const schema = `tg_test_${token()}`
  defer(async () => {
    const client = new pg.Client({ connectionString: PG_URL })
    await client.connect()
    try {
      await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`)
    } finally {
      await client.end()
    }
  })
  return schema
}

/** A fresh Redis key prefix on `url`, whose keys are deleted when the test ends. */
export function scratchPrefix (defer: Defer, url = REDIS_URL): string {
  const prefix = `tgtest:${token()}:`
  defer(async () => {
    const redis = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 1, retryStrategy: () => null })
    redis.on('error', () => {})
    try {
      await redis.connect()
      let cursor = '0'
      do {
        const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 500)
        cursor = next
        if (keys.length > 0) await redis.del(...keys)
      } while (cursor !== '0')
    } catch {
      // A private server that is already gone has nothing left to clean.
    } finally {
      redis.disconnect()
    }
  })
  return prefix
}

async function freePort (): Promise<number> {
  const server = createServer()
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  const address = server.address()
  const port = typeof address === 'object' && address !== null ? address.port : 0
  await new Promise<void>((resolve) => server.close(() => resolve()))
  return port
}

export interface PrivateRedis {
  url: string
  /** SIGKILLs the server: like the shared one (`--save ""`), it comes back empty. */
  kill (): Promise<void>
  start (): Promise<void>
  stop (): Promise<void>
}

/** A redis-server of its own on a free port, started with the same no-persistence flags as the shared one. */
export async function startPrivateRedis (defer: Defer): Promise<PrivateRedis> {
  const port = await freePort()
  let child: ChildProcess | null = null
  const start = async (): Promise<void> => {
    const proc = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', '/tmp'], { stdio: ['ignore', 'pipe', 'pipe'] })
    child = proc
    let out = ''
    await new Promise<void>((resolve, reject) => {
      proc.stdout?.on('data', (d: Buffer) => {
        out += d.toString('utf8')
        if (out.includes('Ready to accept connections')) resolve()
      })
      proc.once('exit', (code) => { reject(new Error(`redis-server exited (${String(code)}): ${out.slice(-500)}`)) })
    })
  }
  const kill = async (): Promise<void> => {
    const proc = child
    child = null
    if (proc === null || proc.exitCode !== null) return
    const exited = once(proc, 'exit')
    proc.kill('SIGKILL')
    await exited
  }
  await start()
  defer(kill)
  return { url: `redis://127.0.0.1:${port}`, kill, start, stop: kill }
}
