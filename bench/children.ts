/**
 * Parent side of the IPC in ipc.ts: forks the bench processes, correlates commands with answers,
 * and owns their lifetime. close() ends every child it started (SIGTERM, then SIGKILL).
 */
import { fork, type ChildProcess } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { dirname, join } from 'node:path'

const HERE = dirname(fileURLToPath(import.meta.url))
/**
 * `npm run bench` runs the bench compiled by tsc (dist/bench), as `npm start` runs the gateway
 * from dist/: its children are the compiled scripts. Run from source (`--import tsx`, as the
 * smoke test does), they are the TypeScript files through tsx.
 */
export const COMPILED = import.meta.url.endsWith('.js')
/** The repository: the working directory of every child. */
export const ROOT = COMPILED ? join(HERE, '..', '..', '..') : join(HERE, '..')
const TAIL_BYTES = 4096

export interface SpawnOptions {
  options?: Record<string, unknown>
  execArgv?: string[]
  readyTimeoutMs?: number
}

interface Pending {
  resolve: (value: Record<string, unknown>) => void
  reject: (err: Error) => void
  timer: NodeJS.Timeout
}

export class Child {
  private nextId = 1
  private readonly pending = new Map<number, Pending>()
  private output = ''
  readonly exited: Promise<number | null>

  constructor (readonly name: string, readonly proc: ChildProcess, verbose: boolean) {
    const keep = (chunk: Buffer): void => {
      if (verbose) process.stderr.write(`[${name}] ${chunk.toString('utf8')}`)
      this.output = (this.output + chunk.toString('utf8')).slice(-TAIL_BYTES)
    }
    proc.stdout?.on('data', keep)
    proc.stderr?.on('data', keep)
    proc.on('message', (raw: unknown) => {
      const message = raw as Record<string, unknown> & { id?: number, type: string }
      if (message.id === undefined) return
      const waiter = this.pending.get(message.id)
      if (waiter === undefined) return
      this.pending.delete(message.id)
      clearTimeout(waiter.timer)
      if (message.type === 'error') waiter.reject(new Error(`${name}: ${String(message.message)}`))
      else waiter.resolve(message)
    })
    this.exited = new Promise((resolve) => {
      proc.once('exit', (code) => {
        for (const [id, waiter] of this.pending) {
          clearTimeout(waiter.timer)
          waiter.reject(new Error(`${name} exited (code ${code ?? 'signal'}) during a command${this.tail()}`))
          this.pending.delete(id)
        }
        resolve(code)
      })
    })
  }

  tail (): string {
    const text = this.output.trim()
    return text === '' ? '' : `; its last output:\n${text}`
  }

  async request<T = Record<string, unknown>> (command: Record<string, unknown> & { type: string }, timeoutMs = 60_000): Promise<T> {
    const id = this.nextId++
    return await new Promise<T>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending.delete(id)
        reject(new Error(`${this.name}: no answer to ${command.type} within ${timeoutMs} ms${this.tail()}`))
      }, timeoutMs)
      this.pending.set(id, { resolve: resolve as (v: Record<string, unknown>) => void, reject, timer })
      this.proc.send({ ...command, id })
    })
  }

  async stop (): Promise<void> {
    if (this.proc.exitCode !== null || this.proc.signalCode !== null) return
    this.proc.kill('SIGTERM')
    const timer = setTimeout(() => { this.proc.kill('SIGKILL') }, 3000)
    await this.exited
    clearTimeout(timer)
  }
}

export class ChildGroup {
  private readonly children = new Set<Child>()
  private readonly killAll = (): void => { for (const c of this.children) c.proc.kill('SIGKILL') }

  constructor (private readonly verbose: boolean) {
    // Last resort if the orchestrator dies abruptly: children also exit when IPC disconnects.
    process.once('exit', this.killAll)
  }

  async spawn (name: string, script: string, options: SpawnOptions = {}): Promise<{ child: Child, ready: Record<string, unknown> }> {
    const proc = fork(join(HERE, COMPILED ? script.replace(/\.ts$/, '.js') : script), [], {
      cwd: ROOT,
      execArgv: [...(COMPILED ? [] : ['--import', 'tsx']), ...(options.execArgv ?? [])],
      env: { ...process.env, BENCH_CHILD_OPTIONS: JSON.stringify(options.options ?? {}) },
      stdio: ['ignore', 'pipe', 'pipe', 'ipc']
    })
    const child = new Child(name, proc, this.verbose)
    this.children.add(child)
    void child.exited.then(() => { this.children.delete(child) })
    const ready = await new Promise<Record<string, unknown>>((resolve, reject) => {
      const timer = setTimeout(() => { reject(new Error(`${name} did not start within ${options.readyTimeoutMs ?? 30_000} ms${child.tail()}`)) }, options.readyTimeoutMs ?? 30_000)
      const onMessage = (raw: unknown): void => {
        const message = raw as { type?: string }
        if (message.type !== 'ready') return
        clearTimeout(timer)
        proc.off('message', onMessage)
        resolve(message as Record<string, unknown>)
      }
      proc.on('message', onMessage)
      void child.exited.then((code) => {
        clearTimeout(timer)
        reject(new Error(`${name} exited (code ${code ?? 'signal'}) before it was ready${child.tail()}`))
      })
    })
    return { child, ready }
  }

  async close (): Promise<void> {
    await Promise.all([...this.children].map(async (c) => { await c.stop() }))
    process.off('exit', this.killAll)
  }
}
