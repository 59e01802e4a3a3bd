/**
 * How a tool process is launched. `bwrap` wraps it in a bubblewrap sandbox: new PID, IPC, UTS and
 * (unless the turn may use the network) network namespaces, the system read-only, the one
 * workspace folder read-write at its own path, a private /tmp and /proc, no capabilities, only
 * the allow-listed environment, kernel resource limits, and death with its parent. Nothing of the
 * gateway is mounted: not its working directory, data folder, config file or other workspaces.
 * `none` starts the process directly, as the gateway user, and is only ever an operator's choice.
 */
import { execFile, type ExecFileException } from 'node:child_process'
import { lstatSync, readlinkSync } from 'node:fs'
import { chown, mkdtemp, rm } from 'node:fs/promises'
import path from 'node:path'
import type { FileOwner } from './workspace-layout.js'

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
}

/** What to hand to spawn(). */
export interface LaunchPlan {
  file: string
  args: string[]
  cwd: string
  env: Record<string, string>
}

export interface Launcher {
  readonly kind: 'bwrap' | 'none'
  plan (request: LaunchRequest): LaunchPlan
}

export interface BwrapOptions {
  bwrapPath: string
  limits: SandboxLimits
  /**
   * Set when the gateway runs as root: the sandbox then drops to this uid/gid inside (setpriv),
   * because the kernel exempts uid 0 from the process limit and root should not run model code.
   * Null: the sandbox keeps the gateway's own (unprivileged) uid in a user namespace.
   */
  dropTo: FileOwner | null
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

export function bwrapLauncher (options: BwrapOptions): Launcher {
  const system = systemMounts()
  const { dropTo, limits } = options
  // Unprivileged: a user namespace (the uid stays the gateway's) in which no further one may be made.
  // Root: no user namespace (it would map back to uid 0); the drop below leaves no capability.
  const identity = dropTo === null
    ? ['--unshare-user', '--disable-userns', '--cap-drop', 'ALL']
    : ['--cap-drop', 'ALL', '--cap-add', 'CAP_SETUID', '--cap-add', 'CAP_SETGID', '--cap-add', 'CAP_SETPCAP']
  const drop = dropTo === null
    ? []
    : [
        '/usr/bin/setpriv', `--reuid=${dropTo.uid}`, `--regid=${dropTo.gid}`, '--clear-groups',
        '--no-new-privs', '--bounding-set=-all', '--inh-caps=-all', '--'
      ]
  return {
    kind: 'bwrap',
    plan (request) {
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
        '--',
        ...drop,
        '/usr/bin/env', '-C', dir,
        ...limitArgs(limits),
        ...request.argv
      ]
      return { file: options.bwrapPath, args, cwd: '/', env: request.env }
    }
  }
}

export function unconfinedLauncher (): Launcher {
  return {
    kind: 'none',
    plan (request) {
      const [file, ...args] = request.argv
      if (file === undefined) throw new Error('nothing to launch')
      return { file, args, cwd: request.workspaceDir, env: request.env }
    }
  }
}

const PROBE_MARK = 'tollgate-sandbox-ok'
const PROBE_TIMEOUT_MS = 10_000

/**
 * Runs a trivial command through the launcher exactly as a tool call would (same mounts, drop and
 * limits, in a scratch folder of the workspace root). Answers null when it works, else why not.
 */
export async function probeLauncher (launcher: Launcher, workspaceRoot: string, owner: FileOwner | null): Promise<string | null> {
  const dir = await mkdtemp(path.join(workspaceRoot, '.sandbox-probe-'))
  try {
    if (owner !== null) await chown(dir, owner.uid, owner.gid)
    const argv = ['/bin/sh', '-c', `echo ${PROBE_MARK}`]
    const plan = launcher.plan({ argv, workspaceDir: dir, network: false, env: { PATH: '/usr/bin:/bin' } })
    const options = { cwd: plan.cwd, env: plan.env, timeout: PROBE_TIMEOUT_MS, maxBuffer: 64 * 1024 }
    return await new Promise((resolve) => {
      execFile(plan.file, plan.args, options, (err, stdout, stderr) => {
        if (err === null && stdout === `${PROBE_MARK}\n`) resolve(null)
        else resolve(probeFailure(plan.file, err, stdout, stderr))
      })
    })
  } finally {
    await rm(dir, { recursive: true, force: true })
  }
}

function probeFailure (file: string, err: ExecFileException | null, stdout: string, stderr: string): string {
  if (err === null) return `unexpected output ${JSON.stringify(stdout.slice(0, 100))}`
  if (typeof err.code === 'string') return `cannot run ${file}: ${err.code}`
  if (err.killed === true) return `no answer within ${PROBE_TIMEOUT_MS} ms`
  const said = stderr.trim().split('\n')[0]?.slice(0, 300) ?? ''
  return said !== '' ? said : `exit code ${String(err.code ?? err.signal ?? 'unknown')}`
}
