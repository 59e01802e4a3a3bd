/**
 * Child side of the orchestrator's IPC: every bench process is forked by run.ts, announces itself
 * with one `ready` message, then answers commands `{id, type, ...}` with `{id, type: 'result' |
 * 'error', ...}`. A child whose parent goes away exits at once, so no bench process outlives a run.
 */

export type Message = Record<string, unknown> & { type: string }
export type Handler = (message: Message) => Promise<Record<string, unknown>> | Record<string, unknown>

function send (message: Record<string, unknown>): void {
  if (process.send !== undefined && process.connected) process.send(message)
}

export function serveCommands (handlers: Record<string, Handler>): void {
  if (process.send === undefined) {
    process.stderr.write('this bench process is started by bench/run.ts (npm run bench), not directly\n')
    process.exit(2)
  }
  process.on('disconnect', () => { process.exit(0) })
  process.on('message', (raw: unknown) => {
    const message = raw as Message & { id?: number }
    const handler = handlers[message.type]
    if (handler === undefined) {
      send({ id: message.id, type: 'error', message: `unknown command ${JSON.stringify(message.type)}` })
      return
    }
    Promise.resolve()
      .then(async () => await handler(message))
      .then((out) => { send({ ...out, id: message.id, type: 'result' }) })
      .catch((err: unknown) => { send({ id: message.id, type: 'error', message: err instanceof Error ? err.message : String(err) }) })
  })
}

export function announceReady (info: Record<string, unknown> = {}): void {
  send({ ...info, type: 'ready' })
}

/** Settings the orchestrator passes to a child, as JSON in one environment variable. */
export function childOptions<T> (): T {
  const raw = process.env.BENCH_CHILD_OPTIONS
  if (raw === undefined || raw === '') return {} as T
  return JSON.parse(raw) as T
}

/** Monotonic nanoseconds. On Linux process.hrtime reads CLOCK_MONOTONIC, which every process shares. */
export function monotonicNs (): bigint {
  return process.hrtime.bigint()
}
