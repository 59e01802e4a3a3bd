/**
 * The process groups tool calls are running, one small file each in a local folder, so that a
 * gateway started after a crash can end the groups the dead one left behind. A record names the
 * recording gateway process and the group's leader each by pid AND start time (and the boot), so
 * a live gateway's groups are never touched and a recycled pid is never taken for one of ours.
 */
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import path from 'node:path'
import type { Logger } from 'pino'

export interface ProcessIdentity {
  pid: number
  /** Clock ticks after boot (field 22 of /proc/<pid>/stat). */
  start: number
}

export interface ProcessLedger {
  /** Records a process group just started (its leader's pid); the returned function forgets it. */
  record (pgid: number, turnId: string): () => void
}

interface Entry {
  boot_id: string
  gateway: ProcessIdentity
  leader: ProcessIdentity
  turn_id: string
}

/** Null when the process does not exist (or this is not Linux). */
export function processStartTime (pid: number): number | null {
  let stat: string
  try {
    stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
  } catch {
    return null
  }
  // The command name (field 2) may contain spaces and parentheses: count from the last ')'.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
  const start = Number(fields[19])
  return Number.isSafeInteger(start) ? start : null
}

function bootId (): string | null {
  try {
    return readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim()
  } catch {
    return null
  }
}

function selfIdentity (): { boot: string, self: ProcessIdentity } | null {
  const boot = bootId()
  const start = processStartTime(process.pid)
  return boot === null || start === null ? null : { boot, self: { pid: process.pid, start } }
}

const forgetNothing = (): void => {}

export class FileProcessLedger implements ProcessLedger {
  private readonly dir: string
  private readonly identity = selfIdentity()

  constructor (dir: string) {
    this.dir = dir
  }

  record (pgid: number, turnId: string): () => void {
    // Without /proc (not Linux) there is nothing to verify a pid with later: record nothing.
    if (this.identity === null) return forgetNothing
    const start = processStartTime(pgid)
    if (start === null) throw new Error(`process ${pgid} cannot be inspected in /proc`)
    mkdirSync(this.dir, { recursive: true, mode: 0o700 })
    const file = path.join(this.dir, `${this.identity.self.pid}-${pgid}.json`)
    const entry: Entry = { boot_id: this.identity.boot, gateway: this.identity.self, leader: { pid: pgid, start }, turn_id: turnId }
    writeFileSync(file, JSON.stringify(entry), { mode: 0o600 })
    return () => { rmSync(file, { force: true }) }
  }
}

function readEntry (file: string): Entry | null {
  try {
    const entry = JSON.parse(readFileSync(file, 'utf8')) as Entry
    return Number.isSafeInteger(entry.leader?.pid) && Number.isSafeInteger(entry.gateway?.pid) ? entry : null
  } catch {
    return null
  }
}

function alive (who: ProcessIdentity): boolean {
  return processStartTime(who.pid) === who.start
}

/**
 * Ends the process groups recorded by gateway processes that no longer run and drops their
 * records; answers the groups it signalled. A group whose leader has exited is still signalled:
 * the kernel never reuses a pid while a process group of that id exists.
 */
export function sweepProcessLedger (dir: string, log: Logger): Array<{ pgid: number, turnId: string }> {
  let names: string[]
  try {
    names = readdirSync(dir).filter((n) => n.endsWith('.json'))
  } catch {
    return []
  }
  const boot = bootId()
  const ended: Array<{ pgid: number, turnId: string }> = []
  for (const name of names) {
    const file = path.join(dir, name)
    const entry = readEntry(file)
    if (entry !== null && entry.boot_id === boot && alive(entry.gateway)) continue
    const leaderStart = entry === null ? null : processStartTime(entry.leader.pid)
    if (entry !== null && entry.boot_id === boot && (leaderStart === null || leaderStart === entry.leader.start)) {
      try {
        process.kill(-entry.leader.pid, 'SIGKILL')
        ended.push({ pgid: entry.leader.pid, turnId: entry.turn_id })
        log.warn({ pgid: entry.leader.pid, turn_id: entry.turn_id }, 'killed a tool process group left running by a stopped gateway')
      } catch {
        // ESRCH: the group ended on its own.
      }
    }
    rmSync(file, { force: true })
  }
  return ended
}
