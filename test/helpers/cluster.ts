/**
 * Gateways in child processes (test/fixtures/gateway-process.ts) for multi-instance and crash
 * tests: each is a real server on its own port, pointed at the test's fake provider and at the
 * shared PostgreSQL schema / Redis prefix the test chose.
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { once } from 'node:events'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { deepMerge } from '../../src/core/config.js'
import type { FakeProvider } from './fake-provider.js'
import { requestJson, TestSocket } from './gateway.js'
import { PG_URL, REDIS_URL, type Defer } from './services.js'

const FIXTURE = new URL('../fixtures/gateway-process.ts', import.meta.url).pathname

export interface GatewayProcess {
  url: string
  instanceId: string
  child: ChildProcess
  http (method: string, path: string, body?: unknown): Promise<{ status: number, body: any }>
  socket (): Promise<TestSocket>
  /** SIGKILL: the crash (no shutdown code runs). */
  kill (): Promise<void>
  /** SIGTERM: a graceful stop. */
  stop (): Promise<void>
}

export interface ClusterOptions {
  provider: FakeProvider
  /** PostgreSQL schema shared by the instances (store.kind = postgres). */
  schema?: string
  /** Redis key prefix shared by the instances (bus.kind = redis). */
  prefix?: string
  redisUrl?: string
}

/** Config overrides of one instance of the test's cluster. */
export function clusterOverrides (options: ClusterOptions, workspace: string, extra: unknown = {}): unknown {
  const base: Record<string, unknown> = {
    server: { host: '127.0.0.1', port: 0 },
    log: { level: 'silent' },
    workspace: { dir: workspace },
    tools: { shell: { process_ledger_dir: join(workspace, '.tool-processes') } },
    ws: { heartbeat_ms: 0 },
    providers: { fake: { kind: 'openai', base_url: options.provider.baseUrl, model: 'fake-model', timeout_ms: 20_000, max_retries: 0 } },
    agents: { default: { provider: 'fake' } },
    cluster: { lease_ms: 2000, control_timeout_ms: 5000 }
  }
  // Never the embedded default: tests do not write ./data.
  base.store = options.schema === undefined ? { kind: 'memory' } : { kind: 'postgres', postgres: { url: PG_URL, schema: options.schema, max_connections: 4 } }
  if (options.prefix !== undefined) base.bus = { kind: 'redis', redis: { url: options.redisUrl ?? REDIS_URL, key_prefix: options.prefix } }
  return deepMerge(base, extra)
}

export interface SpawnOptions {
  /** Extra environment of the gateway process (e.g. the secrets its config names). */
  env?: Record<string, string>
  /** Bearer token its http() and socket() send (for `auth.mode = "jwt"`). */
  token?: string
  /** Run the gateway as this user (the test must run as root). */
  user?: { uid: number, gid: number }
}

export async function spawnGateway (defer: Defer, overrides: unknown, options: SpawnOptions = {}): Promise<GatewayProcess> {
  const child = spawn(process.execPath, ['--import', 'tsx', FIXTURE], {
    env: { ...process.env, ...options.env, TOLLGATE_TEST_OVERRIDES: JSON.stringify(overrides) },
    stdio: ['ignore', 'pipe', 'pipe'],
    ...options.user
  })
  let stderr = ''
  child.stderr?.on('data', (d: Buffer) => { stderr += d.toString('utf8') })
  const ready = await new Promise<{ url: string, instance_id: string }>((resolve, reject) => {
    let out = ''
    const timer = setTimeout(() => { reject(new Error(`gateway process did not start in time: ${stderr.slice(-2000)}`)) }, 30_000)
    child.stdout?.on('data', (d: Buffer) => {
      out += d.toString('utf8')
      // Log lines share stdout; the ready line is the one naming the url.
      for (const line of out.split('\n')) {
        if (!line.startsWith('{"url"')) continue
        clearTimeout(timer)
        resolve(JSON.parse(line) as { url: string, instance_id: string })
      }
    })
    child.once('exit', (code) => {
      clearTimeout(timer)
      reject(new Error(`gateway process exited (${String(code)}) before it was ready: ${stderr.slice(-2000)}`))
    })
  })
  const sockets: TestSocket[] = []
  const auth: Record<string, string> = options.token === undefined ? {} : { authorization: `Bearer ${options.token}` }
  const signal = async (name: NodeJS.Signals): Promise<void> => {
    if (child.exitCode !== null || child.signalCode !== null) return
    for (const s of sockets) s.close()
    const exited = once(child, 'exit')
    child.kill(name)
    await exited
  }
  defer(async () => { await signal('SIGKILL') })
  return {
    url: ready.url,
    instanceId: ready.instance_id,
    child,
    http: async (method, path, body) => await requestJson(ready.url, method, path, body, auth),
    async socket () {
      const protocols = options.token === undefined ? ['tollgate.v1'] : ['tollgate.v1', `bearer.${options.token}`]
      const s = await TestSocket.open(`${ready.url.replace(/^http/, 'ws')}/v1/ws`, protocols, {})
      sockets.push(s)
      return s
    },
    kill: async () => { await signal('SIGKILL') },
    stop: async () => { await signal('SIGTERM') }
  }
}

/** A scratch workspace folder for one instance, removed after the test. */
export async function scratchWorkspace (defer: Defer): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'tollgate-cluster-'))
  defer(async () => { await rm(dir, { recursive: true, force: true }) })
  return dir
}
