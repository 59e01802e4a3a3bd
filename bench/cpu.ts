/**
 * CPU time of the bench processes, read from /proc (Linux): what a runner spends per turn, the
 * whole process and its main thread apart. With one JavaScript thread, a runner's turns/s cannot
 * exceed 1000 / (main-thread ms per turn), whatever the machine has to spare.
 */
import { readFileSync } from 'node:fs'

/** Kernel clock ticks per second (USER_HZ): 100 on every Linux this runs on. */
const TICKS_PER_SECOND = 100

function ticks (statPath: string): number {
  // The command name (field 2) may hold spaces; the fields after its closing parenthesis do not.
  const stat = readFileSync(statPath, 'utf8')
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
  // utime and stime: fields 14 and 15 of the stat line, 12 and 13 after the parenthesis.
  return Number(fields[11]) + Number(fields[12])
}

export interface CpuSample { process: number, mainThread: number }

/** CPU milliseconds used so far by `pid` (all threads) and by its main thread; null where /proc is missing. */
export function cpuSample (pid: number): CpuSample | null {
  try {
    return {
      process: ticks(`/proc/${pid}/stat`) * 1000 / TICKS_PER_SECOND,
      mainThread: ticks(`/proc/${pid}/task/${pid}/stat`) * 1000 / TICKS_PER_SECOND
    }
  } catch {
    return null
  }
}

export function cpuSince (before: CpuSample | null, after: CpuSample | null): CpuSample | null {
  if (before === null || after === null) return null
  return { process: after.process - before.process, mainThread: after.mainThread - before.mainThread }
}
