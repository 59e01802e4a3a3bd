/**
 * Composition root: builds every long-lived part once from config and wires the routes.
 * Tests and embedders call buildServer() and get the real thing, listening on any port.
 */
import { randomUUID } from 'node:crypto'
import { mkdirSync } from 'node:fs'
import { dirname, resolve } from 'node:path'
import Fastify, { type FastifyBaseLogger } from 'fastify'
import websocket from '@fastify/websocket'
import type { Logger } from 'pino'
import { Ajv } from 'ajv'
import addFormatsModule from 'ajv-formats'
import { deprecatedKeys, type Config } from '../core/config.js'
import { deprecationMessage } from '../core/config-renames.js'
import { createAuthenticator } from '../auth/authenticate.js'
import { isLoopbackHost } from '../core/security/loopback.js'
import { enforceAuthentication, WS_PROTOCOL } from '../auth/http.js'
import { createBus } from '../bus/create.js'
import type { BusEnvelope, EventBus } from '../bus/bus.js'
import { InstanceLease } from '../cluster/instance.js'
import { agentDirectory } from '../service/agent-resolution.js'
import { warnOpenAutoApprovingAgents } from '../service/agent-access.js'
import { ConnectionRegistry } from '../service/connections.js'
import { TurnService } from '../service/turn-service.js'
import { ApprovalBroker } from '../approval/broker.js'
import { createDelegateTool } from '../turn/subturn-tool.js'
import { McpManager } from '../mcp/manager.js'
import { composeObservers, type Observer } from '../observe/observer.js'
import { createProviders } from '../providers/index.js'
import { createObservability } from '../observe/observability.js'
import { createAuditLedger, createStore } from '../store/create.js'
import { connectionUrl } from '../core/connection-url.js'
import { createJournal, eventArchive } from '../journal/create.js'
import type { TurnJournal } from '../journal/journal.js'
import { AuditRecorder } from '../service/audit-recorder.js'
import type { Store } from '../store/store.js'
import { BUILTIN_TOOL_NAMES, createBuiltinTools } from '../tools/builtin/index.js'
import { FileProcessLedger, sweepProcessLedger } from '../tools/builtin/process-ledger.js'
import { bwrapLauncher, cannotRun, probeLauncher, unconfinedLauncher, type Launcher } from '../tools/builtin/sandbox.js'
import { SandboxCgroups, type CgroupLimits } from '../tools/builtin/sandbox-cgroups.js'
import { SandboxIdentities, unmappedIds, type SandboxIdRange } from '../tools/builtin/sandbox-identity.js'
import { seccompProgram } from '../tools/builtin/seccomp.js'
import { WorkspaceFiles } from '../tools/builtin/workspace-files.js'
import { WorkspaceLayout } from '../tools/builtin/workspace-layout.js'
import { ToolCatalog } from '../tools/catalog.js'
import { checkStartup } from './startup-checks.js'
import { createHttpTools } from '../tools/http-tools/index.js'
import type { Tool } from '../tools/contract.js'
import { NO_HOOKS, type ToolHooks } from '../turn/hooks.js'
import { createGatewayLogger } from '../core/security/log-scrub.js'
import { createHostPolicy, hostCheck } from '../core/security/host-check.js'
import { createOriginPolicy } from '../core/security/origin-check.js'
import { answerClientError, answerFrameworkError, MAX_PATH_PARAM_CHARS } from '../http/early-refusals.js'
import { echoRequestIds, echoRequestIdsOnUpgrade, RequestIds } from '../http/request-id.js'
import { registerCors } from '../http/cors.js'
import { refusePlainRequestsToWebSockets } from '../http/websocket-only.js'
import healthRoutes from '../../routes/health.js'
import metricsRoutes from '../../routes/metrics.js'
import turnRoutes from '../../routes/turns.js'
import approvalRoutes from '../../routes/approvals.js'
import steeringRoutes from '../../routes/steering.js'
import auditRoutes from '../../routes/audit.js'
import toolResultRoutes from '../../routes/tool-results.js'
import receiptRoutes from '../../routes/receipts.js'
import sessionRoutes from '../../routes/sessions.js'
import toolRoutes from '../../routes/tools.js'
import wsRoutes from '../../routes/ws.js'
import acpRoutes from '../../routes/acp.js'
import { ACP_PROTOCOL } from '../transport/acp-socket.js'
import uiRoutes from '../../routes/ui.js'
import apiDocsRoutes from '../../routes/docs.js'
import openapiRoutes from '../../routes/openapi.js'
import agUiRoutes from '../../routes/ag-ui.js'
import aiSdkRoutes from '../../routes/ai-sdk.js'
import { collectRoutes } from '../openapi/routes.js'
import type { Gateway } from './gateway.js'
import { installErrorHandlers } from './http-errors.js'
import { Lifecycle } from './lifecycle.js'
import { trackUnusedSockets } from './unused-sockets.js'
import { RedisTurnSlots } from '../cluster/turn-slots.js'
import { loadPermissionBook } from '../approval/permission-book.js'
import { receiptKeyring } from '../receipts/keyring.js'
import { WebhookDispatcher } from '../notify/dispatcher.js'
import { outboxNotifier, SILENT_NOTIFIER } from '../notify/notifier.js'
import { resolveNotifications, sendContext } from '../notify/setup.js'
import webhookRoutes from '../../routes/webhooks.js'
import { Scheduler } from '../schedule/scheduler.js'
import { Schedules } from '../schedule/schedules.js'
import type { ScheduleRunFailedSink } from '../schedule/fire.js'
import scheduleRoutes from '../../routes/schedules.js'

export type { Gateway } from './gateway.js'

/** Webhook deliveries one instance tries at once. */
const DELIVERY_BATCH = 16

type AddFormats = (ajv: Ajv) => Ajv
const addFormats = ((addFormatsModule as unknown as { default?: AddFormats }).default ?? addFormatsModule) as unknown as AddFormats

export interface BuildOptions {
  config: Config
  env?: NodeJS.ProcessEnv
  hooks?: ToolHooks
  observers?: readonly Observer[]
  /** Extra tools added to the catalog (embedding, tests); agents still have to list them. */
  tools?: readonly Tool[]
  logger?: Logger
  store?: Store
  bus?: EventBus
  /** A turn journal built over `bus` (which must then be given too); by default createJournal() over it. */
  journal?: TurnJournal
  /** Fault injection for crash tests: called after each group of events is stored, before it is published. */
  afterEventWrite?: (group: readonly BusEnvelope[]) => void
  /** Told of scheduled runs that could not start or whose turn failed (besides the `schedule.run_failed` webhook). */
  scheduleRunFailed?: ScheduleRunFailedSink
}

/** Body validation is strict (no coercion, no stripping); query and params coerce from strings. */
function validatorCompiler (): (route: { schema: object, httpPart?: string }) => (data: unknown) => boolean {
  const strict = new Ajv({ allErrors: false, strict: false, removeAdditional: false, useDefaults: false, coerceTypes: false })
  const lenient = new Ajv({ allErrors: false, strict: false, removeAdditional: false, useDefaults: true, coerceTypes: 'array' })
  addFormats(strict)
  addFormats(lenient)
  return ({ schema, httpPart }) => (httpPart === 'body' ? strict : lenient).compile(schema)
}

export interface ToolSetup {
  catalog: ToolCatalog
  workspaces: WorkspaceLayout
  /** Runs the file tools' requests; its workers end with close(). */
  files: WorkspaceFiles
  /** Ends what the shell's sandbox keeps between commands (its cgroups). */
  closeSandbox: () => Promise<void>
}

interface ShellSandbox {
  /** Null when `shell` cannot be offered. */
  launcher: Launcher | null
  identities: SandboxIdentities
  cgroups: SandboxCgroups | null
}

const NOBODY_CHANGES_USER = new SandboxIdentities(null)

function cgroupLimits (config: Config): CgroupLimits {
  const { command, tenant } = config.tools.shell.cgroups
  return {
    command: { memoryBytes: command.memory_bytes, processes: command.processes, cpus: command.cpus },
    tenant: { memoryBytes: tenant.memory_bytes, processes: tenant.processes, cpus: tenant.cpus }
  }
}

const MAX_ID = 4_294_967_294

/** Why the bubblewrap sandbox cannot be set up as configured, before anything runs in it. */
async function sandboxPrerequisite (config: Config, range: SandboxIdRange | null): Promise<string | null> {
  const shell = config.tools.shell
  if (range !== null) {
    if (range.firstUid + range.count - 1 > MAX_ID || range.firstGid + range.count - 1 > MAX_ID) {
      return `sandbox_uid/sandbox_gid + sandbox_id_count goes past ${MAX_ID}`
    }
    const unmapped = unmappedIds(range)
    if (unmapped !== null) return `${unmapped}: set tools.shell.sandbox_uid, sandbox_gid and sandbox_id_count within it`
  }
  return await cannotRun(shell.bwrap_path)
}

/**
 * The shell's launcher (null when `shell` cannot be offered), who each tenant's commands run as,
 * and the cgroups they run in. The bubblewrap sandbox is probed by running a command through it;
 * if that fails the gateway says so once and leaves `shell` out rather than run commands
 * unconfined behind the operator's back.
 */
async function shellSandbox (config: Config, root: string, log: Logger): Promise<ShellSandbox> {
  const shell = config.tools.shell
  if (shell.sandbox === 'none') {
    log.warn('tools.shell.sandbox is "none": shell commands run unconfined, with the gateway\'s files, network and user')
    return { launcher: unconfinedLauncher(), identities: NOBODY_CHANGES_USER, cgroups: null }
  }
  // A root gateway hands each tenant's commands a uid of their own; the workspaces then belong to it.
  const asRoot = process.getuid?.() === 0
  const range = asRoot ? { firstUid: shell.sandbox_uid, firstGid: shell.sandbox_gid, count: shell.sandbox_id_count } : null
  const disabled = (problem: string): ShellSandbox => {
    log.error({ bwrap_path: shell.bwrap_path, reason: problem },
      `the shell tool is disabled: the bubblewrap sandbox does not work here (${problem}); install bubblewrap and allow user namespaces, ` +
      'or set tools.shell.sandbox = "none" to run commands unconfined')
    return { launcher: null, identities: NOBODY_CHANGES_USER, cgroups: null }
  }
  const seccomp = seccompProgram(process.arch)
  if (seccomp === null) return disabled(`no seccomp filter for the ${process.arch} architecture`)
  const prerequisite = await sandboxPrerequisite(config, range)
  if (prerequisite !== null) return disabled(prerequisite)
  const cgroups = shell.cgroups.mode === 'off'
    ? null
    : asRoot ? SandboxCgroups.open({ limits: cgroupLimits(config), log }) : 'the gateway is not root'
  if (typeof cgroups === 'string') {
    log[asRoot ? 'warn' : 'info']({ reason: cgroups },
      `sandboxed commands get no cgroups (${cgroups}): only the per-process limits` + (asRoot ? ' and the per-tenant uids bound them' : ' bound them'))
  }
  const groups = typeof cgroups === 'string' ? null : cgroups
  const limits = shell.limits
  const launcher = bwrapLauncher({
    bwrapPath: shell.bwrap_path,
    limits: {
      cpuSeconds: limits.cpu_seconds,
      memoryBytes: limits.memory_bytes,
      fileBytes: limits.file_bytes,
      processes: limits.processes,
      tmpBytes: limits.tmp_bytes
    },
    asRoot,
    seccomp,
    cgroups: groups === null ? null : { groups, limits: cgroupLimits(config) }
  })
  const identities = new SandboxIdentities(range)
  const problem = await probeLauncher(launcher, root, identities.probeOwner())
  if (problem === null) return { launcher, identities, cgroups: groups }
  await groups?.close()
  return disabled(problem)
}

/** The local folder of the process ledger: by default in the data folder, beside the SQLite file. */
function processLedgerDir (config: Config): string {
  return resolve(config.tools.shell.process_ledger_dir ?? resolve(dirname(config.store.sqlite.path), 'tool-processes'))
}

/** Every tool the gateway can offer, and the workspace folders they act in. */
export async function buildCatalog (config: Config, extra: readonly Tool[], log: Logger): Promise<ToolSetup> {
  const root = resolve(config.workspace.dir)
  mkdirSync(root, { recursive: true })
  const { shell } = config.tools
  const sandbox = await shellSandbox(config, root, log)
  const { launcher } = sandbox
  const workspaces = new WorkspaceLayout({ root, perSession: config.workspace.per_session, identities: sandbox.identities })
  const files = new WorkspaceFiles({ root: workspaces.root })
  if (!WorkspaceFiles.supported) log.error('file_read and file_write need Linux (they open paths through /proc/self/fd): every call of theirs fails here')
  const catalog = new ToolCatalog()
  const tools = createBuiltinTools({
    shell: launcher === null
      ? null
      : {
          launcher,
          ledger: new FileProcessLedger(processLedgerDir(config)),
          timeoutMs: shell.timeout_ms,
          maxOutputBytes: shell.max_output_bytes,
          blockHighRisk: shell.block_high_risk_commands,
          requireApprovalForMedium: shell.require_approval_for_medium_risk,
          envAllowlist: shell.env_allowlist,
          progressAfterMs: shell.progress_after_ms
        },
    files: { maxReadBytes: config.tools.files.max_read_bytes, maxWriteBytes: config.tools.files.max_write_bytes, workspace: files },
    http: {
      allowHosts: config.tools.http.allow_hosts,
      allowPrivate: config.tools.http.allow_private,
      timeoutMs: config.tools.http.timeout_ms,
      maxResponseBytes: config.tools.http.max_response_bytes,
      maxRedirects: config.tools.http.max_redirects
    }
  })
  for (const tool of [...tools, ...extra]) catalog.add(tool)
  return { catalog, workspaces, files, closeSandbox: async () => { await sandbox.cgroups?.close() } }
}

export async function buildServer (options: BuildOptions): Promise<Gateway> {
  const { config } = options
  const env = options.env ?? process.env
  // Agents may name the embedder's tools and the configured HTTP tools beside the built-in ones.
  checkStartup(config, env, [...(options.tools ?? []).map((tool) => tool.name), ...Object.keys(config.http_tools)])
  const log = options.logger ?? createGatewayLogger(config.log.level)
  for (const key of deprecatedKeys(config)) log.warn({ config_key: key.old, renamed_to: key.new }, deprecationMessage(key))
  const auth = createAuthenticator(config, env)
  if (auth.mode === 'none' && !isLoopbackHost(config.server.host)) {
    throw new Error(`auth.mode "none" is only allowed on a loopback address, not ${config.server.host}`)
  }
  if (auth.mode === 'none') log.warn('auth.mode is "none": every local client acts as one principal; bind stays on loopback')
  const hosts = createHostPolicy(config, log)
  const origins = createOriginPolicy(config)
  const receipts = receiptKeyring(config, env)
  // Before anything is opened: a declaration the gateway cannot honour stops the start here.
  const httpTools = createHttpTools(config, env)
  if (config.receipts.keys.length === 0 && config.store.kind !== 'memory') {
    log.warn('receipts.keys is empty: receipts verify only in this process, not on other instances or after a restart')
  }

  const connections = new ConnectionRegistry()
  const instanceId = options.store?.instanceId ?? config.cluster.instance_id ?? `inst_${randomUUID()}`
  // What start-up has opened so far: a failed start closes it, so it leaves no database handle,
  // Redis connection or MCP child behind; shutdown closes it in the same one order.
  const lifecycle = new Lifecycle()
  lifecycle.opened('auth', async () => { await auth.close() })
  try {
    const notifications = resolveNotifications(config, env)
    const store = options.store ?? await createStore(config, { instanceId, env, log, planner: notifications.planner })
    lifecycle.opened('store', async () => { await store.close() })
    const audit = new AuditRecorder(await createAuditLedger(config, { env, log, store }), log)
    lifecycle.opened('audit', async () => { await audit.close() })
    if (options.journal !== undefined && options.bus === undefined) throw new Error('a journal is built over a bus: pass the bus it publishes to as well')
    const onListenerError = (err: unknown): void => { log.error({ err }, 'event listener failed') }
    const bus = options.bus ?? await createBus(config, { env, log, archive: eventArchive(config, store), onListenerError })
    lifecycle.opened('bus', async () => { await bus.close() })
    // The journal writes each event to the store's event log (where it keeps one), then publishes it on the bus.
    const journal = options.journal ?? createJournal(config, { bus, store, log, afterGroupWrite: options.afterEventWrite })
    lifecycle.opened('journal', async () => { await journal.close() })
    const slots = config.bus.kind === 'redis'
      ? await RedisTurnSlots.connect({
        url: connectionUrl(config.bus.redis, env, 'bus.redis'),
        keyPrefix: config.bus.redis.key_prefix,
        leaseMs: config.cluster.lease_ms,
        connectTimeoutMs: config.bus.redis.connect_timeout_ms,
        log
      })
      : null
    if (slots !== null) lifecycle.opened('slots', async () => { await slots.close() })
    const providers = createProviders(config, env)
    lifecycle.opened('providers', async () => { for (const p of providers.values()) await p.close() })
    const observability = createObservability({
      config,
      log,
      sources: { activeTurns: () => turns.activeCount, wsConnections: () => connections.count('ws'), isKnownTool: (name) => turns.catalog.has(name) }
    })
    lifecycle.opened('observability', () => { observability.close() })
    const observer = composeObservers(options.observers ?? [], (err) => { log.error({ err }, 'observer failed') })
    const mcp = await McpManager.start({ config, env, log })
    lifecycle.opened('mcp', async () => { await mcp.close() })
    // Before any new tool process: end the ones a crashed gateway left behind.
    sweepProcessLedger(processLedgerDir(config), log)
    const extraTools = [createDelegateTool({ agents: agentDirectory(config, providers) }), ...(options.tools ?? []), ...httpTools]
    const { catalog, workspaces, files, closeSandbox } = await buildCatalog(config, extraTools, log)
    lifecycle.opened('files', async () => { await files.close() })
    lifecycle.opened('sandbox', closeSandbox)
    warnOpenAutoApprovingAgents(config, catalog, mcp, log)
    const permissions = await loadPermissionBook(config, {
      has: (name) => catalog.has(name) || BUILTIN_TOOL_NAMES.includes(name),
      mcpServers: new Set(Object.keys(config.mcp.servers))
    })
    lifecycle.opened('permissions', () => { permissions.close() })
    const turns = new TurnService({
      config,
      catalog,
      workspaces,
      providers,
      observer: observability.around(observer),
      hooks: options.hooks ?? NO_HOOKS,
      store,
      bus,
      journal,
      connections,
      log,
      mcp,
      broker: new ApprovalBroker(),
      instanceId,
      receipts,
      slots,
      permissions,
      audit
    })
    lifecycle.opened('turns', async () => { await turns.shutdown() })
    const lease = await InstanceLease.start({
      store,
      bus,
      journal,
      leaseMs: config.cluster.lease_ms,
      eventRetentionMs: config.store.event_retention_ms,
      retentionMs: config.turns.retention_ms,
      isLocal: (turnId) => turns.isRunningHere(turnId),
      resume: async (orphan) => await turns.resume(orphan),
      log
    })

    lifecycle.opened('lease', async () => { await lease.close() })
    const notifier = notifications.planner === null ? SILENT_NOTIFIER : outboxNotifier(notifications.plan, store.outbox)
    if (notifications.planner !== null) {
      const send = sendContext(config)
      const dispatcher = new WebhookDispatcher({
        outbox: store.outbox,
        instanceId,
        targets: notifications.targets,
        send,
        retry: { initialBackoffMs: config.notifications.initial_backoff_ms, maxBackoffMs: config.notifications.max_backoff_ms },
        pollMs: config.notifications.poll_ms,
        leaseMs: config.notifications.lease_ms,
        batch: DELIVERY_BATCH,
        exclusive: store.exclusive,
        log
      })
      dispatcher.start()
      lifecycle.opened('notifications', async () => {
        await dispatcher.close()
        await send.dispatcher.close()
      })
    }
    // A failed scheduled run is announced as `schedule.run_failed` to the webhooks that ask for it,
    // and told to an embedder's own sink as well when it gives one.
    const sink: ScheduleRunFailedSink = {
      runFailed: async (info) => {
        await Promise.all([
          notifier.announce('schedule.run_failed', info.tenant, { ...info }),
          options.scheduleRunFailed?.runFailed(info)
        ])
      }
    }
    const scheduler = new Scheduler({ config: config.schedules, store, turns, log, sink })
    scheduler.start()
    lifecycle.opened('schedules', async () => { await scheduler.close() })
    const schedules = new Schedules({ config, store, log, settled: async (id) => { await scheduler.settled(id) } })

    const requestIds = new RequestIds()
    const app = Fastify({
      loggerInstance: log as unknown as FastifyBaseLogger,
      bodyLimit: config.server.body_limit_bytes,
      requestTimeout: config.server.request_timeout_ms,
      requestIdHeader: false,
      genReqId: requestIds.assign,
      routerOptions: { maxParamLength: MAX_PATH_PARAM_CHARS },
      clientErrorHandler: answerClientError(log as unknown as FastifyBaseLogger),
      frameworkErrors: answerFrameworkError
    })
    const unusedSockets = trackUnusedSockets(app.server)
    lifecycle.opened('http', async () => {
      for (const client of app.websocketServer.clients) client.close(1001, 'server shutting down')
      await unusedSockets.closeWith(app.close())
    })
    app.setValidatorCompiler(validatorCompiler())
    // Only JSON bodies: a text/plain body is 415 UNSUPPORTED_MEDIA_TYPE like any other type.
    app.removeContentTypeParser('text/plain')
    // Before any route: the API documents are built from every route registered after this.
    collectRoutes(app)
    echoRequestIds(app)
    refusePlainRequestsToWebSockets(app)
    app.decorateRequest('principal', null)
    await app.register(websocket, {
      options: {
        maxPayload: config.ws.max_payload_bytes,
        // Echo only our protocol; the `bearer.<JWT>` entry is a credential, never a protocol choice.
        handleProtocols: (protocols: Set<string>) => {
          if (protocols.has(WS_PROTOCOL)) return WS_PROTOCOL
          return protocols.has(ACP_PROTOCOL) ? ACP_PROTOCOL : false
        }
      }
    })
    echoRequestIdsOnUpgrade(app.websocketServer, requestIds)
    // Before every route, upgrade, document and 404, so none of them answers a foreign Host; after
    // the websocket plugin, whose own hook marks upgrades so a refused one's socket gets closed.
    app.addHook('onRequest', hostCheck(hosts))
    await registerCors(app, config, origins)

    const gateway: Gateway = {
      app,
      config,
      turns,
      connections,
      metrics: observability.metrics,
      bus,
      journal,
      store,
      audit,
      schedules,
      instanceId,
      auth,
      origins,
      log,
      mcp,
      workspaces,
      notifier,
      storeReachable: () => lease.held(),
      busReachable: () => {
        const since = bus.unreachableSince()
        const limit = config.bus.redis.unready_after_ms
        return since === null || limit === 0 || Date.now() - since < limit
      },
      close: async () => { await lifecycle.close() }
    }
    app.decorate('gateway', gateway)

    installErrorHandlers(app, config)

    enforceAuthentication(app)
    await app.register(healthRoutes)
    await app.register(metricsRoutes)
    await app.register(turnRoutes)
    await app.register(approvalRoutes)
    await app.register(steeringRoutes)
    await app.register(toolResultRoutes)
    await app.register(receiptRoutes)
    await app.register(auditRoutes)
    await app.register(webhookRoutes)
    await app.register(scheduleRoutes)
    await app.register(sessionRoutes)
    await app.register(toolRoutes)
    await app.register(agUiRoutes)
    await app.register(aiSdkRoutes)
    await app.register(wsRoutes)
    await app.register(acpRoutes)
    await app.register(uiRoutes)
    await app.register(apiDocsRoutes)
    await app.register(openapiRoutes)
    return gateway
  } catch (err) {
    await lifecycle.abandon()
    throw err
  }
}
