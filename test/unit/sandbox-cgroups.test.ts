/**
 * Per-tenant and per-command cgroups: where the machine has none for the gateway (described by a
 * mountinfo and a /proc/self/cgroup the test writes), and on this machine's real cgroup v1
 * hierarchies where the suite may make groups (root); skipped with the reason elsewhere.
 */
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { existsSync, readFileSync } from 'node:fs'
import path from 'node:path'
import { pino } from 'pino'
import { SandboxCgroups, type CgroupLimits } from '../../src/tools/builtin/sandbox-cgroups.js'

const log = pino({ level: 'silent' })
const LIMITS: CgroupLimits = {
  command: { memoryBytes: 268_435_456, processes: 64, cpus: 4 },
  tenant: { memoryBytes: 1_073_741_824, processes: 128, cpus: 1.5 }
}

const V1_MOUNTS = [
  '31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755',
  '32 31 0:29 / /sys/fs/cgroup/cpu,cpuacct rw,relatime - cgroup cgroup rw,cpu,cpuacct',
  '35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory',
  '39 31 0:36 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids'
].join('\n')

test('a machine with only cgroup v2 gives no groups, and says why', () => {
  const opened = SandboxCgroups.open({
    limits: LIMITS,
    log,
    files: { mountinfo: '30 23 0:26 / /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw,nsdelegate', procCgroup: '0::/system.slice/tollgate.service\n' }
  })
  assert.equal(opened, 'no cgroup v1 hierarchy with the pids controller')
})

test('a process whose cgroup lies outside the mounted part of a hierarchy gives no groups', () => {
  const mountinfo = V1_MOUNTS.replace('39 31 0:36 / /sys/fs/cgroup/pids', '39 31 0:36 /docker/abc /sys/fs/cgroup/pids')
  const opened = SandboxCgroups.open({ limits: LIMITS, log, files: { mountinfo, procCgroup: '8:pids:/\n4:memory:/\n1:cpu,cpuacct:/\n' } })
  assert.equal(opened, 'this process\'s pids cgroup / is outside the mounted hierarchy')
})

test('hierarchies the gateway cannot write to give no groups, and the reason names the error', () => {
  const mountinfo = V1_MOUNTS.replaceAll('/sys/fs/cgroup/', '/nonexistent/cgroup/')
  const opened = SandboxCgroups.open({ limits: LIMITS, log, files: { mountinfo, procCgroup: '8:pids:/\n4:memory:/\n1:cpu,cpuacct:/\n' } })
  assert.equal(opened, 'cannot create cgroups: ENOENT')
})

const REAL = process.getuid?.() === 0 ? SandboxCgroups.open({ limits: LIMITS, log }) : 'the suite does not run as root'
const realSkip = typeof REAL === 'string' ? `no cgroups for the gateway here (${REAL}): NOT TESTED here` : false

test('a command\'s group and its tenant\'s carry their limits, the command\'s CPU at most the tenant\'s, and go when it ends', { skip: realSkip }, async (t) => {
  assert.ok(typeof REAL !== 'string')
  t.after(async () => { await REAL.close() })
  const group = REAL.enter('acme-0123456789abcdef')
  const dirs = group.procsFiles.map((f) => path.dirname(f))
  const [pids, memory, cpu] = dirs as [string, string, string]
  const read = (dir: string, file: string): string => readFileSync(path.join(dir, file), 'utf8').trim()
  assert.deepEqual([read(pids, 'pids.max'), read(memory, 'memory.limit_in_bytes'), read(cpu, 'cpu.cfs_quota_us')], ['64', '268435456', '150000'])
  const tenant = dirs.map((d) => path.dirname(d)) as [string, string, string]
  assert.deepEqual([read(tenant[0], 'pids.max'), read(tenant[1], 'memory.limit_in_bytes'), read(tenant[2], 'cpu.cfs_quota_us')], ['128', '1073741824', '150000'])

  // A process that joins the group and leaves a child behind: release kills both and removes the groups.
  const child = spawn('/bin/sh', ['-c', 'for f; do echo $$ > "$f"; done; sleep 30.4242 & wait', 'join', ...group.procsFiles], { stdio: 'ignore' })
  const exited = new Promise((resolve) => child.on('exit', resolve))
  while (read(pids, 'cgroup.procs').split('\n').length < 2) await new Promise((resolve) => setImmediate(resolve))
  assert.deepEqual(await group.release(), { oomKills: 0, forksRefused: 0 })
  await exited
  for (const dir of [...dirs, ...tenant]) assert.equal(existsSync(dir), false, dir)
})
