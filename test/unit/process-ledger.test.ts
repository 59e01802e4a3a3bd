import { test, type TestContext } from 'node:test'
import assert from 'node:assert/strict'
import { spawn, type ChildProcess } from 'node:child_process'
import { promises as fs, readFileSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { pino } from 'pino'
import { FileProcessLedger, processStartTime, sweepProcessLedger } from '../../src/tools/builtin/process-ledger.js'
import { processesWith, untilNoProcessWith } from '../helpers/processes.js'
import { eventually } from '../helpers/eventually.js'

const log = pino({ level: 'silent' })
const BOOT = readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim()

async function ledgerDir (t: TestContext): Promise<string> {
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'tollgate-ledger-'))
  t.after(async () => { await fs.rm(dir, { recursive: true, force: true }) })
  return dir
}

/** A running process group of its own (a shell and two sleeps), like a tool call's, told apart by `marker`. */
async function group (t: TestContext, marker: string): Promise<ChildProcess & { pid: number }> {
  const child = spawn('/bin/sh', ['-c', `sleep ${marker} & sleep ${marker}`], { detached: true, stdio: 'ignore' })
  t.after(() => { try { process.kill(-(child.pid as number), 'SIGKILL') } catch {} })
  await eventually(async () => (await processesWith(`sleep ${marker}`)).length === 3, { what: 'the group to start' })
  return child as ChildProcess & { pid: number }
}

function startOf (pid: number): number {
  const start = processStartTime(pid)
  assert.ok(start !== null)
  return start
}

async function writeEntry (dir: string, entry: Record<string, unknown>): Promise<void> {
  const leader = (entry.leader as { pid: number }).pid
  await fs.writeFile(path.join(dir, `1-${leader}.json`), JSON.stringify(entry))
}

test('the start time of a process is read from /proc and is null for a process that does not exist', () => {
  assert.equal(typeof processStartTime(process.pid), 'number')
  assert.equal(processStartTime(2 ** 22 + 1), null)
})

test('sweeping kills a recorded group whose gateway process is gone, and drops its record', async (t) => {
  const dir = await ledgerDir(t)
  const child = await group(t, '30.6101')
  // The recording gateway's pid now belongs to another process (this one): a different start time.
  await writeEntry(dir, { boot_id: BOOT, gateway: { pid: process.pid, start: startOf(process.pid) + 1 }, leader: { pid: child.pid, start: startOf(child.pid) }, turn_id: 'turn_a' })
  assert.deepEqual(sweepProcessLedger(dir, log), [{ pgid: child.pid, turnId: 'turn_a' }])
  await untilNoProcessWith('sleep 30.6101')
  assert.deepEqual(await fs.readdir(dir), [])
})

test('sweeping leaves the groups of a gateway that still runs alone', async (t) => {
  const dir = await ledgerDir(t)
  const child = await group(t, '30.6102')
  const forget = new FileProcessLedger(dir).record(child.pid, 'turn_b')
  assert.deepEqual(sweepProcessLedger(dir, log), [])
  assert.equal((await processesWith('sleep 30.6102')).length, 3)
  assert.equal((await fs.readdir(dir)).length, 1)
  forget()
  assert.deepEqual(await fs.readdir(dir), [])
})

test('sweeping does not kill a process that only reuses a recorded leader\'s pid', async (t) => {
  const dir = await ledgerDir(t)
  const child = await group(t, '30.6103')
  await writeEntry(dir, { boot_id: BOOT, gateway: { pid: process.pid, start: startOf(process.pid) + 1 }, leader: { pid: child.pid, start: startOf(child.pid) - 1 }, turn_id: 'turn_c' })
  assert.deepEqual(sweepProcessLedger(dir, log), [])
  assert.equal((await processesWith('sleep 30.6103')).length, 3)
  assert.deepEqual(await fs.readdir(dir), [])
})

test('records from an earlier boot are dropped without signalling anything', async (t) => {
  const dir = await ledgerDir(t)
  const child = await group(t, '30.6104')
  await writeEntry(dir, { boot_id: 'an-earlier-boot', gateway: { pid: process.pid, start: startOf(process.pid) + 1 }, leader: { pid: child.pid, start: startOf(child.pid) }, turn_id: 'turn_d' })
  assert.deepEqual(sweepProcessLedger(dir, log), [])
  assert.equal((await processesWith('sleep 30.6104')).length, 3)
  assert.deepEqual(await fs.readdir(dir), [])
})

test('an unreadable record is dropped and a missing ledger folder is no error', async (t) => {
  const dir = await ledgerDir(t)
  await fs.writeFile(path.join(dir, '1-2.json'), '{not json')
  assert.deepEqual(sweepProcessLedger(dir, log), [])
  assert.deepEqual(await fs.readdir(dir), [])
  assert.deepEqual(sweepProcessLedger(path.join(dir, 'missing'), log), [])
})
