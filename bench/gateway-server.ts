/**
 * The Tollgate under test: the real server from buildServer() and loadConfig(), with the no-op
 * tools registered through the embedding API and admitted without approval, pointed at the fake
 * provider. The store, the bus and the turn journal are built by the same createStore(),
 * createBus() and createJournal() that buildServer() calls for `npm start` — so the SQLite store
 * persists every event through the stored journal — with two additions that do not change what
 * runs: a SQL probe on the store (statement and commit counts; only when asked, since it costs a
 * few microseconds per statement) and a timestamp wrapper outside the journal (fan-out latency).
 * Commands let the orchestrator read memory (after a full GC), count tool runs and SQL work, and
 * read the emit times of a watched turn's events.
 */
import { existsSync, rmSync, statSync } from 'node:fs'
import { mkdtemp } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createBus } from '../src/bus/create.js'
import { loadConfig } from '../src/core/config.js'
import { createGatewayLogger } from '../src/core/security/log-scrub.js'
import { buildServer } from '../src/app/server.js'
import { createJournal, eventArchive } from '../src/journal/create.js'
import { createStore } from '../src/store/create.js'
import { SqlCounter } from '../src/store/sql-probe.js'
import { SqliteStore } from '../src/store/sqlite.js'
import { defineTool, ok } from '../src/tools/contract.js'
import { announceReady, childOptions, serveCommands } from './ipc.js'
import { TimedJournal } from './timed-journal.js'
import { MODEL, NOOP_TOOLS, SYSTEM_PROMPT } from './workload.js'

/** `durable: false` turns checkpoints off on SQLite (`shutdown.running_turns = "cancel"`): what durability costs. */
/** `noTools`: the agent has no tools (streaming section: a chat agent whose answers stream live). */
interface Options { providerUrl: string, stream: boolean, store: 'sqlite' | 'memory', probe: boolean, durable: boolean, noTools?: boolean }

function fullGc (): void {
  const gc = (globalThis as { gc?: () => void }).gc
  if (gc === undefined) throw new Error('the gateway process needs --expose-gc')
  gc()
  gc()
}

async function main (): Promise<void> {
  const options = childOptions<Options>()
  const workspace = await mkdtemp(join(tmpdir(), 'tollgate-bench-'))
  // Every way out (close, SIGTERM, the orchestrator going away) ends in process.exit.
  process.once('exit', () => { rmSync(workspace, { recursive: true, force: true }) })
  let toolRuns = 0
  const tools = NOOP_TOOLS.map((t) => defineTool<{ n: number }>({
    name: t.name,
    description: t.description,
    parameters: t.parameters,
    async execute (args) {
      toolRuns++
      return ok(t.run(args))
    }
  }))
  const config = loadConfig({
    env: {},
    overrides: {
      server: { host: '127.0.0.1', port: 0 },
      log: { level: 'error' },
      auth: { mode: 'none' },
      workspace: { dir: workspace },
      // Abuse limits, not capacity: one benchmark client legitimately exceeds what one user may do.
      ws: { frame_rate: { per_second: 1_000_000, burst: 1_000_000 } },
      turns: { max_active_turns: 4096, max_active_turns_per_principal: 4096 },
      ...(options.durable ? {} : { shutdown: { running_turns: 'cancel' as const } }),
      // The embedded default store (SQLite, every event persisted) kept in the scratch folder, or
      // the memory store (nothing persisted) for the second row.
      store: { kind: options.store, sqlite: { path: join(workspace, 'tollgate.db') } },
      providers: { fake: { kind: 'openai', base_url: options.providerUrl, model: MODEL, stream: options.stream, timeout_ms: 30_000 } },
      agents: { default: { provider: 'fake', system_prompt: SYSTEM_PROMPT, tools: options.noTools === true ? [] : NOOP_TOOLS.map((t) => t.name) } },
      risk_profiles: { default: { auto_approve: NOOP_TOOLS.map((t) => t.name) } }
    }
  })
  const log = createGatewayLogger(config.log.level)
  const sql = options.probe ? new SqlCounter() : null
  const instanceId = `inst_bench_${process.pid}`
  const store = await createStore(config, { instanceId, env: {}, log, ...(sql === null ? {} : { probe: sql }) })
  const bus = await createBus(config, { env: {}, log, archive: eventArchive(config, store), onListenerError: (err) => { log.error({ err }, 'event listener failed') } })
  const journal = new TimedJournal(createJournal(config, { bus, store, log }))
  const gateway = await buildServer({ config, tools, logger: log, store, bus, journal })
  // The SQLite row is the default wiring, where turns outlive the process (checkpointed).
  if (gateway.turns.durable !== (options.store === 'sqlite' && options.durable)) throw new Error(`the ${options.store} gateway's turns are ${gateway.turns.durable ? '' : 'not '}durable`)
  const url = await gateway.app.listen({ host: '127.0.0.1', port: 0, backlog: 4096 })

  // Stopped by the orchestrator without a `close` command (it is failing): still close cleanly.
  process.once('SIGTERM', () => { void gateway.close().finally(() => process.exit(0)) })

  serveCommands({
    memory: () => {
      fullGc()
      const m = process.memoryUsage()
      return { rss: m.rss, heapUsed: m.heapUsed, external: m.external, sockets: gateway.app.websocketServer.clients.size }
    },
    tools: () => ({ runs: toolRuns }),
    sql: () => {
      if (sql === null) throw new Error('this gateway was started without a SQL probe')
      return { ...sql.snapshot() }
    },
    watch: (m) => {
      journal.watch(String(m.turnId))
      return {}
    },
    emits: (m) => ({ emits: journal.take(String(m.turnId)).map(([seq, ns]) => [seq, ns.toString()]) }),
    // Once the finished turns' deferred work is done (SQLite compacts them after their finish): the
    // CPU read after it is all that the turns cost.
    settled: async () => {
      if (store instanceof SqliteStore) await store.compacted()
      return {}
    },
    // Bytes of the SQLite database file and of its WAL (the shared-memory index is not storage).
    storage: () => {
      const size = (file: string): number => existsSync(join(workspace, file)) ? statSync(join(workspace, file)).size : 0
      return { database: size('tollgate.db'), wal: size('tollgate.db-wal') }
    },
    close: async () => {
      await gateway.close()
      return {}
    }
  })
  announceReady({ url })
}

void main()
