/**
 * What runs on this machine, read from /proc: lets a test tell whether a command it started (in a
 * sandbox's own pid namespace or not) is still alive, by a marker in its command line.
 */
import { promises as fs } from 'node:fs'
import { eventually } from './eventually.js'

function running (stat: string): boolean {
  // A killed orphan stays a zombie until it is reaped; it no longer does anything.
  return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z'
}

/** Pids of live processes whose command line contains `marker`. */
export async function processesWith (marker: string): Promise<number[]> {
  const found: number[] = []
  for (const name of await fs.readdir('/proc')) {
    if (!/^\d+$/.test(name)) continue
    const [cmdline, stat] = await Promise.all([
      fs.readFile(`/proc/${name}/cmdline`, 'utf8').catch(() => ''),
      fs.readFile(`/proc/${name}/stat`, 'utf8').catch(() => '')
    ])
    if (stat !== '' && running(stat) && cmdline.replaceAll('\0', ' ').includes(marker)) found.push(Number(name))
  }
  return found
}

export async function untilNoProcessWith (marker: string, timeoutMs = 20_000): Promise<void> {
  await eventually(async () => (await processesWith(marker)).length === 0, { what: `no process running "${marker}"`, timeoutMs })
}

export async function untilFileExists (file: string, timeoutMs = 20_000): Promise<void> {
  await eventually(async () => await fs.stat(file).then(() => true, () => false), { what: `${file} to exist`, timeoutMs })
}
