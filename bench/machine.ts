/** The machine a run happened on, for the report: results only compare within one machine and run. */
import { cpus, freemem, loadavg, release, totalmem, type } from 'node:os'
import { execFileSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'

export interface Machine {
  os: string
  cpu: string
  cores: number
  memoryGiB: number
  freeGiB: number
  node: string
  openFiles: number
}

/** The open-file limit children inherit; Node has no API for getrlimit. */
export function openFileLimit (): number {
  try {
    const out = execFileSync('sh', ['-c', 'ulimit -n'], { encoding: 'utf8' }).trim()
    const n = Number(out)
    return Number.isInteger(n) && n > 0 ? n : 1024
  } catch {
    return 1024
  }
}

export function describeMachine (): Machine {
  const list = cpus()
  return {
    os: `${type()} ${release()}`,
    cpu: list[0]?.model.trim() ?? 'unknown',
    cores: list.length,
    memoryGiB: totalmem() / 2 ** 30,
    freeGiB: freemem() / 2 ** 30,
    node: process.version,
    openFiles: openFileLimit()
  }
}

/** The code measured: the Tollgate commit and the peer's pinned packages. */
export function describeVersions (root: string): string {
  let commit = 'unknown commit'
  try {
    commit = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: root, encoding: 'utf8' }).trim()
    const dirty = execFileSync('git', ['status', '--porcelain', '--untracked-files=no'], { cwd: root, encoding: 'utf8' }).trim() !== ''
    if (dirty) commit += ' with uncommitted changes'
  } catch {}
  let peer = ''
  try {
    const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { dependencies?: Record<string, string>, devDependencies?: Record<string, string> }
    // zod is also a dependency of the gateway itself; the AI SDK packages are dev dependencies.
    const declared = { ...pkg.dependencies, ...pkg.devDependencies }
    peer = ['ai', '@ai-sdk/openai-compatible', 'zod'].map((name) => `${name} ${declared[name] ?? '?'}`).join(', ')
  } catch {}
  return `Tollgate ${commit}; peer ${peer}`
}

export function loadAverage (): string {
  return loadavg().map((l) => l.toFixed(2)).join(' ')
}
