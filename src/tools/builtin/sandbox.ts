/**
 * How a tool process is launched. `bwrap` wraps it in a bubblewrap sandbox: new PID, IPC, UTS and
 * (unless the turn may use the network) network namespaces, the system read-only, the one
 * workspace folder read-write at its own path, a private /tmp and /proc, no capabilities, only
 * the allow-listed environment, kernel resource limits, a seccomp filter that refuses new
 * namespaces and the keyrings (seccomp.ts), and death with its parent. A root gateway's command
 * runs as its tenant's uid (sandbox-identity.ts) and, where the machine allows, in its tenant's
 * and its own cgroups (sandbox-cgroups.ts). Nothing of the gateway is mounted: not its working
 * directory, data folder, config file or other workspaces. `none` starts the process directly,
 * as the gateway user, and is only ever an operator's choice.
 */
import { spawn, type ChildProcessByStdio } from 'node:child_process'
import { constants, lstatSync, readlinkSync } from 'node:fs'
import { access, chown, mkdtemp, rm } from 'node:fs/promises'
import path from 'node:path'
import type { Readable } from 'node:stream'
import type { CgroupLimits, CgroupReport, SandboxCgroups } from './sandbox-cgroups.js'
import type { FileOwner } from '../contract.js'

export interface SandboxLimits {
  cpuSeconds: number
  memoryBytes: number
  fileBytes: number
  processes: number
  tmpBytes: number
}

export interface LaunchRequest {
  /** Program and arguments as seen inside the sandbox. */
  argv: readonly string[]
  /** Canonical, existing folder: the process starts in it and may write only there. */
  workspaceDir: string
  network: boolean
  /** The whole environment of the process. */
  env: Record<string, string>
  /**
   * The tenant's uid/gid (a root gateway's `ToolContext.workspaceOwner`): the command runs as it,
   * in the cgroup of that uid; null for a gateway that is not root.
   */
  owner: FileOwner | null
}

/** What to hand to spawn(). */
export interface LaunchPlan {
  file: string
  args: string[]
  cwd: string
  env: Record<string, string>
  /** Bytes the process reads from its fd 3 (bwrap's seccomp filter); null: it gets no fd 3. */
  fd3: Buffer | null
}

export interface Launch {
  plan: LaunchPlan
  /**
   * Called once, after the process is over (or failed to start): ends whatever it left behind
   * and answers a sentence for each limit it ran into, for its result.
   */
  finish (): Promise<string[]>
}

export interface Launcher {
  readonly kind: 'bwrap' | 'none'
  /** Throws when the command cannot be given its confinement (its cgroup cannot be made): it must not run. */
  prepare (request: LaunchRequest): Launch
}

export interface BwrapOptions {
  bwrapPath: string
  limits: SandboxLimits
  /**
   * The gateway runs as root: the sandbox then drops to the request's `owner` inside
   * (setpriv), because the kernel exempts uid 0 from the process limit and root should not run
   * model code. False: the sandbox keeps the gateway's own (unprivileged) uid in a user namespace.
   */
  asRoot: boolean
  /** The seccomp filter (seccomp.ts) every command runs under. */
  seccomp: Buffer
  /** Per-tenant and per-command cgroups (root only); null where the machine does not let the gateway make them. */
  cgroups: { groups: SandboxCgroups, limits: CgroupLimits } | null
}

// Top-level system folders other than /usr: symlinks into /usr on merged-/usr systems, real
// folders elsewhere. Resolved once, so the plan mirrors this machine's layout.
const SYSTEM_DIRS = ['/bin', '/sbin', '/lib', '/lib32', '/lib64', '/libx32']

// /etc is not mounted: only what programs need to load and behave, none of it secret.
const ETC_ALWAYS = ['/etc/alternatives', '/etc/ld.so.cache', '/etc/ld.so.conf', '/etc/ld.so.conf.d', '/etc/localtime']
// Name resolution and TLS trust, mounted only when the call may use the network.
const ETC_NETWORK = [
  '/etc/resolv.conf', '/etc/hosts', '/etc/nsswitch.conf', '/etc/host.conf', '/etc/gai.conf',
  '/etc/services', '/etc/protocols', '/etc/ssl', '/etc/ca-certificates', '/etc/pki'
]

function systemMounts (): string[] {
  const args: string[] = ['--ro-bind', '/usr', '/usr']
  for (const dir of SYSTEM_DIRS) {
    try {
      const st = lstatSync(dir)
      if (st.isSymbolicLink()) args.push('--symlink', readlinkSync(dir), dir)
      else if (st.isDirectory()) args.push('--ro-bind', dir, dir)
    } catch {
      // Absent on this machine: nothing to mirror.
    }
  }
  return args
}

/** Folders above the workspace, created traversable (bwrap would make them 0700). */
function ancestorDirs (dir: string): string[] {
  const args: string[] = []
  const parts = dir.split(path.sep).filter((p) => p !== '')
  for (let i = 1; i < parts.length; i++) args.push('--perms', '0755', '--dir', `/${parts.slice(0, i).join('/')}`)
  return args
}

function limitArgs (limits: SandboxLimits): string[] {
  return [
    '/usr/bin/prlimit', `--cpu=${limits.cpuSeconds}`, `--as=${limits.memoryBytes}`, `--fsize=${limits.fileBytes}`,
    `--nproc=${limits.processes}`, '--core=0', '--'
  ]
}

// Runs as the gateway's user before bwrap: joins the command's cgroups, then becomes bwrap, so
// every process of the command is counted from its first fork on.
const ENTER_CGROUPS = 'while [ "$1" != -- ]; do echo $$ > "$1" || exit 125; shift; done; shift; exec "$@"'

function limitNotices (report: CgroupReport, limits: CgroupLimits): string[] {
  const notices: string[] = []
  if (report.oomKills > 0) {
    notices.push(`memory limit reached: the kernel killed ${report.oomKills} process(es) of this command ` +
      `(at most ${limits.command.memoryBytes} bytes per command, ${limits.tenant.memoryBytes} for all of the tenant's commands)`)
  }
  if (report.forksRefused > 0) {
    notices.push(`process limit reached: ${report.forksRefused} process creation(s) refused (at most ${limits.command.processes} per command)`)
  }
  return notices
}

export function bwrapLauncher (options: BwrapOptions): Launcher {
  const system = systemMounts()
  const { asRoot, limits } = options
  // Unprivileged: a user namespace (the uid stays the gateway's) in which no further one may be made.
  // Root: no user namespace (it would map back to uid 0); the drop below leaves no capability, and
  // the seccomp filter refuses every new namespace, so none can be made there either.
  const identity = asRoot
    ? ['--cap-drop', 'ALL', '--cap-add', 'CAP_SETUID', '--cap-add', 'CAP_SETGID', '--cap-add', 'CAP_SETPCAP']
    : ['--unshare-user', '--disable-userns', '--cap-drop', 'ALL']
  const drop = (request: LaunchRequest): string[] => {
    const owner = request.owner
    if (asRoot !== (owner !== null)) throw new Error('a root gateway runs every command as its tenant\'s uid, any other as its own')
    if (owner === null) return []
    return [
      '/usr/bin/setpriv', `--reuid=${owner.uid}`, `--regid=${owner.gid}`, '--clear-groups',
      '--no-new-privs', '--bounding-set=-all', '--inh-caps=-all', '--'
    ]
  }
  return {
    kind: 'bwrap',
    prepare (request) {
      const dir = request.workspaceDir
      const etc = request.network ? [...ETC_ALWAYS, ...ETC_NETWORK] : ETC_ALWAYS
      const args = [
        '--die-with-parent', '--new-session',
        ...identity,
        '--unshare-pid', '--unshare-ipc', '--unshare-uts', '--unshare-cgroup-try',
        ...(request.network ? [] : ['--unshare-net']),
        '--hostname', 'sandbox',
        ...system,
        // bwrap makes the parents of a mount point private (0700): the sandbox user must pass them.
        '--perms', '0755', '--dir', '/etc',
        ...etc.flatMap((p) => ['--ro-bind-try', p, p]),
        '--proc', '/proc',
        '--dev', '/dev',
        '--perms', '1777', '--size', String(limits.tmpBytes), '--tmpfs', '/tmp',
        ...ancestorDirs(dir),
        '--bind', dir, dir,
        // The process enters the workspace itself, after the drop: root without capabilities
        // could not enter a folder private to the sandbox user.
        '--chdir', '/',
        // Loaded last, just before the command starts: bwrap's own set-up is not filtered.
        '--seccomp', '3',
        '--',
        ...drop(request),
        '/usr/bin/env', '-C', dir,
        ...limitArgs(limits),
        ...request.argv
      ]
      const plan = { file: options.bwrapPath, args, cwd: '/', env: request.env, fd3: options.seccomp }
      if (options.cgroups === null) return { plan, finish: async () => [] }
      const { groups, limits: groupLimits } = options.cgroups
      // The tenant's group is its uid's: tenants whose ids collide share it, as they share the uid.
      if (request.owner === null) throw new Error('cgroups are a root gateway\'s, for commands that run as a tenant\'s uid')
      const group = groups.enter(`uid-${request.owner.uid}`)
      return {
        plan: { ...plan, file: '/bin/sh', args: ['-c', ENTER_CGROUPS, 'tollgate-cgroup', ...group.procsFiles, '--', plan.file, ...plan.args] },
        finish: async () => limitNotices(await group.release(), groupLimits)
      }
    }
  }
}

export function unconfinedLauncher (): Launcher {
  return {
    kind: 'none',
    prepare (request) {
      const [file, ...args] = request.argv
      if (file === undefined) throw new Error('nothing to launch')
      return { plan: { file, args, cwd: request.workspaceDir, env: request.env, fd3: null }, finish: async () => [] }
    }
  }
}

/**
 * Starts a plan in a process group of its own (so the whole group can be signalled), its output
 * piped, and hands it its fd 3 bytes.
 */
export function spawnPlan (plan: LaunchPlan): ChildProcessByStdio<null, Readable, Readable> {
  const child = spawn(plan.file, plan.args, {
    cwd: plan.cwd,
    env: plan.env,
    detached: true,
    stdio: plan.fd3 === null ? ['ignore', 'pipe', 'pipe'] : ['ignore', 'pipe', 'pipe', 'pipe']
  }) as ChildProcessByStdio<null, Readable, Readable>
  const input = child.stdio[3]
  if (plan.fd3 !== null && input !== undefined && input !== null && 'end' in input) {
    // A process that dies before reading closes the pipe: its exit says what went wrong, not EPIPE.
    input.on('error', () => {})
    input.end(plan.fd3)
  }
  return child
}

const PROBE_MARK = 'tollgate-sandbox-ok'
const PROBE_TIMEOUT_MS = 10_000
const PROBE_OUTPUT_BYTES = 64 * 1024

/** Null when `file` exists and may be executed, else why not (`cannot run /usr/bin/bwrap: ENOENT`). */
export async function cannotRun (file: string): Promise<string | null> {
  try {
    await access(file, constants.X_OK)
    return null
  } catch (err) {
    return `cannot run ${file}: ${(err as NodeJS.ErrnoException).code ?? 'unknown error'}`
  }
}

/**
 * Runs a trivial command through the launcher exactly as a tool call would (same mounts, drop,
 * seccomp filter, cgroups and limits, in a scratch folder of the workspace root). Answers null
 * when it works, else why not.
 */
export async function probeLauncher (launcher: Launcher, workspaceRoot: string, owner: FileOwner | null): Promise<string | null> {
  const dir = await mkdtemp(path.join(workspaceRoot, '.sandbox-probe-'))
  try {
    if (owner !== null) await chown(dir, owner.uid, owner.gid)
    const argv = ['/bin/sh', '-c', `echo ${PROBE_MARK}`]
    let launch: Launch
    try {
      launch = launcher.prepare({ argv, workspaceDir: dir, network: false, env: { PATH: '/usr/bin:/bin' }, owner })
    } catch (err) {
      return `cannot prepare a command: ${err instanceof Error ? err.message : String(err)}`
    }
    try {
      return await runProbe(launch.plan)
    } finally {
      await launch.finish()
    }
  } finally {
    await rm(dir, { recursive: true, force: true })
  }
}

function runProbe (plan: LaunchPlan): Promise<string | null> {
  return new Promise((resolve) => {
    const child = spawnPlan(plan)
    let stdout = ''
    let stderr = ''
    const keep = (text: string, chunk: Buffer): string => (text + chunk.toString('utf8')).slice(0, PROBE_OUTPUT_BYTES)
    child.stdout.on('data', (chunk: Buffer) => { stdout = keep(stdout, chunk) })
    child.stderr.on('data', (chunk: Buffer) => { stderr = keep(stderr, chunk) })
    const timer = setTimeout(() => {
      try {
        if (child.pid !== undefined) process.kill(-child.pid, 'SIGKILL')
      } catch {
        // Already gone.
      }
      resolve(`no answer within ${PROBE_TIMEOUT_MS} ms`)
    }, PROBE_TIMEOUT_MS)
    child.on('error', (err: NodeJS.ErrnoException) => {
      clearTimeout(timer)
      resolve(`cannot run ${plan.file}: ${err.code ?? err.message}`)
    })
    child.on('close', (code, signal) => {
      clearTimeout(timer)
      if (code === 0 && stdout === `${PROBE_MARK}\n`) resolve(null)
      else if (code === 0) resolve(`unexpected output ${JSON.stringify(stdout.slice(0, 100))}`)
      else resolve(stderr.trim().split('\n')[0]?.slice(0, 300) || `exit code ${String(code ?? signal ?? 'unknown')}`)
    })
  })
}
