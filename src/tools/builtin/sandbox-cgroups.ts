/**
 * Control groups for sandboxed commands, where the machine lets the gateway make them (cgroup v1
 * `pids`, `memory` and `cpu` hierarchies it can write to, i.e. a root gateway on a host or VM):
 * one group per tenant, holding one group per running command. The tenant's group bounds all its
 * running commands together and gets an equal CPU share beside the other tenants; the command's
 * bounds that one command, however many processes it starts. Everything lives below the
 * gateway's own cgroup in each hierarchy, in a folder named after this gateway process, so the
 * next start can tell a crashed gateway's leftovers from a live one's.
 *
 * cgroupfs operations are in-kernel and immediate: they are made synchronously, which keeps the
 * creation and removal of a tenant's group ordered without a lock.
 */
import { randomBytes } from 'node:crypto'
import { existsSync, mkdirSync, readdirSync, readFileSync, rmdirSync, writeFileSync } from 'node:fs'
import path from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import type { Logger } from 'pino'
import { processStartTime } from './process-ledger.js'

export interface GroupLimits {
  memoryBytes: number
  processes: number
  /** CPUs' worth of time per period (1.5: one and a half cores). */
  cpus: number
}

export interface CgroupLimits {
  command: GroupLimits
  tenant: GroupLimits
}

const CONTROLLERS = ['pids', 'memory', 'cpu'] as const
type Controller = typeof CONTROLLERS[number]

/** This gateway's folder in each hierarchy. */
type Roots = Readonly<Record<Controller, string>>

const CPU_PERIOD_US = 100_000
// How long a command's group may take to empty after the command ended (its processes are
// being killed, which the kernel finishes asynchronously).
const EMPTY_TRIES = 40
const EMPTY_WAIT_MS = 25
const GATEWAY_PREFIX = 'tollgate-'

/** What a finished command ran into, for its result. */
export interface CgroupReport {
  /** Processes of the command the kernel killed for going over a memory limit. */
  oomKills: number
  /** Process creations refused by the command's process limit. */
  forksRefused: number
}

export interface CommandCgroup {
  /** The `cgroup.procs` files the launched process must write its own pid to before it starts the command. */
  readonly procsFiles: readonly string[]
  /** Kills what is left in the group, reads what limits it hit and removes it (and its tenant's, when idle). */
  release (): Promise<CgroupReport>
}

interface CgroupMount {
  controllers: string[]
  /** The cgroup path the mount shows at its mount point. */
  root: string
  mountPoint: string
}

/** cgroup v1 mounts, from /proc/self/mountinfo (`… root mountpoint … - cgroup cgroup rw,pids`). */
function cgroupMounts (mountinfo: string): CgroupMount[] {
  const mounts: CgroupMount[] = []
  for (const line of mountinfo.split('\n')) {
    const [before, after] = line.split(' - ')
    if (before === undefined || after === undefined) continue
    const [fstype, , superOptions] = after.split(' ')
    if (fstype !== 'cgroup' || superOptions === undefined) continue
    const fields = before.split(' ')
    const root = fields[3]
    const mountPoint = fields[4]
    if (root === undefined || mountPoint === undefined) continue
    mounts.push({ controllers: superOptions.split(','), root: unescapeMount(root), mountPoint: unescapeMount(mountPoint) })
  }
  return mounts
}

/** mountinfo writes space, tab, newline and backslash as octal escapes. */
function unescapeMount (field: string): string {
  return field.replace(/\\([0-7]{3})/g, (_m, octal: string) => String.fromCharCode(parseInt(octal, 8)))
}

/** The process's cgroup path per v1 controller, from /proc/self/cgroup (`4:memory:/a/b`, `2:cpu,cpuacct:/`). */
function ownPaths (procCgroup: string): Map<string, string> {
  const paths = new Map<string, string>()
  for (const line of procCgroup.split('\n')) {
    const match = /^\d+:([^:]*):(.*)$/.exec(line)
    if (match === null) continue
    for (const controller of (match[1] ?? '').split(',')) if (controller !== '') paths.set(controller, match[2] ?? '/')
  }
  return paths
}

/** This process's own folder in each controller's hierarchy, or why there is none. */
function ownFolders (files: { mountinfo: string, procCgroup: string }): Roots | string {
  const mounts = cgroupMounts(files.mountinfo)
  const own = ownPaths(files.procCgroup)
  const found: Partial<Record<Controller, string>> = {}
  for (const controller of CONTROLLERS) {
    const mount = mounts.find((m) => m.controllers.includes(controller))
    const at = own.get(controller)
    if (mount === undefined || at === undefined) return `no cgroup v1 hierarchy with the ${controller} controller`
    const inside = path.posix.relative(mount.root, at)
    if (inside.startsWith('..')) return `this process's ${controller} cgroup ${at} is outside the mounted hierarchy`
    found[controller] = path.join(mount.mountPoint, inside)
  }
  return found as Roots
}

function readNumberLine (file: string, key: string): number {
  try {
    const line = readFileSync(file, 'utf8').split('\n').find((l) => l.startsWith(`${key} `))
    const value = Number(line?.slice(key.length + 1))
    return Number.isSafeInteger(value) ? value : 0
  } catch {
    return 0
  }
}

function writeLimits (dirs: Roots, limits: GroupLimits, cpuCap: number): void {
  writeFileSync(path.join(dirs.pids, 'pids.max'), String(limits.processes))
  writeFileSync(path.join(dirs.memory, 'memory.limit_in_bytes'), String(limits.memoryBytes))
  // With swap accounting, memory plus swap gets the same bound: going over never just swaps.
  const memsw = path.join(dirs.memory, 'memory.memsw.limit_in_bytes')
  if (existsSync(memsw)) writeFileSync(memsw, String(limits.memoryBytes))
  writeFileSync(path.join(dirs.cpu, 'cpu.cfs_period_us'), String(CPU_PERIOD_US))
  // cgroup v1 refuses a child quota above its parent's: the command's is at most the tenant's.
  const quota = Math.max(1000, Math.round(Math.min(limits.cpus, cpuCap) * CPU_PERIOD_US))
  writeFileSync(path.join(dirs.cpu, 'cpu.cfs_quota_us'), String(quota))
}

function under (dirs: Roots, name: string): Roots {
  return { pids: path.join(dirs.pids, name), memory: path.join(dirs.memory, name), cpu: path.join(dirs.cpu, name) }
}

/**
 * One level at a time (its parent exists): a recursive mkdir can loop for ever on a pseudo
 * file system that answers ENOENT below a folder that exists.
 */
function makeGroup (dirs: Roots): void {
  for (const controller of CONTROLLERS) {
    try {
      mkdirSync(dirs[controller])
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err
    }
  }
}

function processesIn (dir: string): number[] {
  try {
    return readFileSync(path.join(dir, 'cgroup.procs'), 'utf8').split('\n').filter((l) => l !== '').map(Number)
  } catch {
    return []
  }
}

function killAll (dir: string): void {
  for (const pid of processesIn(dir)) {
    try {
      process.kill(pid, 'SIGKILL')
    } catch {
      // ESRCH: already gone.
    }
  }
}

/** Removes a group folder (after its children) in one hierarchy; false while processes remain. */
function removeTree (dir: string): boolean {
  let children: string[]
  try {
    children = readdirSync(dir, { withFileTypes: true }).filter((e) => e.isDirectory()).map((e) => e.name)
  } catch {
    return true
  }
  let removed = true
  for (const child of children) removed = removeTree(path.join(dir, child)) && removed
  killAll(dir)
  try {
    rmdirSync(dir)
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code
    if (code !== 'ENOENT') removed = false
  }
  return removed
}

function tryRemove (dirs: Roots): boolean {
  let removed = true
  for (const controller of CONTROLLERS) {
    try {
      rmdirSync(dirs[controller])
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') removed = false
    }
  }
  return removed
}

/** `tollgate-<pid>-<start>-<random>`: whose folder it is, so a later start can tell whether its gateway still runs. */
function ownerAlive (name: string): boolean {
  const match = /^tollgate-(\d+)-(\d+)-[0-9a-f]+$/.exec(name)
  if (match === null) return true
  return processStartTime(Number(match[1])) === Number(match[2])
}

export interface CgroupOptions {
  limits: CgroupLimits
  log: Logger
  /** Where the kernel describes mounts and this process's cgroups (tests point elsewhere). */
  files?: { mountinfo: string, procCgroup: string }
}

export class SandboxCgroups {
  private readonly root: Roots
  private readonly limits: CgroupLimits
  private readonly log: Logger
  /** Running commands per tenant key; a tenant's group exists while its count is above zero. */
  private readonly running = new Map<string, number>()
  private commands = 0

  private constructor (root: Roots, options: CgroupOptions) {
    this.root = root
    this.limits = options.limits
    this.log = options.log
  }

  /**
   * Sets up this gateway's folder in each hierarchy (removing those of gateways that no longer
   * run), or answers why cgroups cannot be used here.
   */
  static open (options: CgroupOptions): SandboxCgroups | string {
    let files = options.files
    if (files === undefined) {
      try {
        files = { mountinfo: readFileSync('/proc/self/mountinfo', 'utf8'), procCgroup: readFileSync('/proc/self/cgroup', 'utf8') }
      } catch (err) {
        return `cannot read this process's cgroups: ${(err as Error).message}`
      }
    }
    const own = ownFolders(files)
    if (typeof own === 'string') return own
    sweepStopped(own, options.log)
    const start = processStartTime(process.pid) ?? 0
    // The random part tells apart gateways built in one process (tests, embedders).
    const root = under(own, `${GATEWAY_PREFIX}${process.pid}-${start}-${randomBytes(4).toString('hex')}`)
    try {
      makeGroup(root)
      // One limit written proves the hierarchy takes them (a read-only or foreign one does not).
      writeFileSync(path.join(root.pids, 'pids.max'), 'max')
    } catch (err) {
      tryRemove(root)
      return `cannot create cgroups: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`
    }
    return new SandboxCgroups(root, options)
  }

  /** Creates the command's group (and its tenant's, if it has no other running command). */
  enter (tenantKey: string): CommandCgroup {
    const tenant = under(this.root, tenantKey)
    const count = this.running.get(tenantKey) ?? 0
    if (count === 0) {
      // Made again if something removed it meanwhile (an operator, a sweep from another pid namespace).
      makeGroup(this.root)
      makeGroup(tenant)
      writeLimits(tenant, this.limits.tenant, this.limits.tenant.cpus)
    }
    const group = under(tenant, `c${++this.commands}`)
    try {
      makeGroup(group)
      writeLimits(group, this.limits.command, this.limits.tenant.cpus)
    } catch (err) {
      tryRemove(group)
      if (count === 0) tryRemove(tenant)
      throw err
    }
    this.running.set(tenantKey, count + 1)
    let released: Promise<CgroupReport> | null = null
    return {
      procsFiles: CONTROLLERS.map((c) => path.join(group[c], 'cgroup.procs')),
      release: () => (released ??= this.release(tenantKey, tenant, group))
    }
  }

  private async release (tenantKey: string, tenant: Roots, group: Roots): Promise<CgroupReport> {
    const report = {
      oomKills: readNumberLine(path.join(group.memory, 'memory.oom_control'), 'oom_kill'),
      forksRefused: readNumberLine(path.join(group.pids, 'pids.events'), 'max')
    }
    let removed = false
    for (let i = 0; i < EMPTY_TRIES && !removed; i++) {
      if (i > 0) await sleep(EMPTY_WAIT_MS)
      killAll(group.pids)
      removed = tryRemove(group)
    }
    if (!removed) this.log.warn({ cgroup: group.pids }, 'a finished command\'s cgroup did not empty; it is removed when the gateway stops')
    const left = (this.running.get(tenantKey) ?? 1) - 1
    if (left > 0) {
      this.running.set(tenantKey, left)
    } else {
      this.running.delete(tenantKey)
      // Fails while a command's group lingers; the next command of the tenant uses it again.
      tryRemove(tenant)
    }
    return report
  }

  /** Kills whatever still runs in this gateway's groups and removes them all. */
  async close (): Promise<void> {
    for (let i = 0; i < EMPTY_TRIES; i++) {
      if (i > 0) await sleep(EMPTY_WAIT_MS)
      if (CONTROLLERS.map((c) => removeTree(this.root[c])).every(Boolean)) return
    }
    this.log.warn({ cgroup: this.root.pids }, 'this gateway\'s cgroups did not empty; the next start removes them')
  }
}

/** Removes the folders of gateway processes that no longer run, with anything left in them. */
function sweepStopped (own: Roots, log: Logger): void {
  let names: string[]
  try {
    names = readdirSync(own.pids).filter((n) => n.startsWith(GATEWAY_PREFIX))
  } catch {
    return
  }
  for (const name of names) {
    if (ownerAlive(name)) continue
    const gone = CONTROLLERS.every((c) => removeTree(path.join(own[c], name)))
    log.info({ cgroup: name, removed: gone }, 'removed the cgroups of a stopped gateway')
  }
}
