/**
 * Graceful shutdown of the built server (`npm start` runs exactly dist/src/main.js after the same
 * tsc build): SIGTERM mid-turn cancels the turn cleanly, delivers its terminal event, closes the
 * socket with 1001 and exits 0.
 */
import { once } from 'node:events'
import { before, test } from 'node:test'
import assert from 'node:assert/strict'
import { execFile, spawn } from 'node:child_process'
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { connect, type Socket } from 'node:net'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { TestSocket } from '../helpers/gateway.js'
import { eventually } from '../helpers/eventually.js'

const run = promisify(execFile)

before(async () => {
  await run(process.execPath, ['node_modules/typescript/bin/tsc', '-p', 'tsconfig.build.json'], { timeout: 240_000 })
})

interface BuiltServer {
  address: string
  exited: Promise<{ code: number | null, signal: NodeJS.Signals | null }>
  logs: () => string
  kill: (signal: NodeJS.Signals) => void
}

/** `dist/src/main.js` in a scratch workspace with this config file, listening on a free port. */
async function startBuilt (t: { after: (fn: () => Promise<void>) => void }, config: Record<string, unknown>): Promise<BuiltServer> {
  const workspace = await mkdtemp(join(tmpdir(), 'tollgate-shutdown-'))
  const configFile = join(workspace, 'tollgate.json')
  // The embedded SQLite store goes to the scratch folder, not the checkout's ./data.
  await writeFile(configFile, JSON.stringify({ store: { sqlite: { path: join(workspace, 'data', 'tollgate.db') } }, ...config }))
  const child = spawn(process.execPath, ['dist/src/main.js'], {
    env: { ...process.env, TOLLGATE_PORT: '0', TOLLGATE_HOST: '127.0.0.1', TOLLGATE_WORKSPACE: workspace, TOLLGATE_LOG_LEVEL: 'info', TOLLGATE_CONFIG: configFile },
    stdio: ['ignore', 'pipe', 'pipe']
  })
  const exited = new Promise<{ code: number | null, signal: NodeJS.Signals | null }>((resolve) => child.on('exit', (code, signal) => resolve({ code, signal })))
  t.after(async () => {
    if (child.exitCode === null) child.kill('SIGKILL')
    await rm(workspace, { recursive: true, force: true })
  })
  let logs = ''
  const address = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`the server did not start; output:\n${logs}`)), 30_000)
    child.stdout.on('data', (c: Buffer) => {
      logs += c.toString('utf8')
      const m = /tollgate listening on (http:\/\/[^"\s]+)/.exec(logs)
      if (m?.[1] !== undefined) {
        clearTimeout(timer)
        resolve(m[1])
      }
    })
    child.stderr.on('data', (c: Buffer) => { logs += c.toString('utf8') })
    child.on('exit', () => reject(new Error(`the server exited early; output:\n${logs}`)))
  })
  return { address, exited, logs: () => logs, kill: (signal) => { child.kill(signal) } }
}

test('SIGTERM to the built server mid-turn cancels the turn, delivers turn.cancelled, closes the socket with 1001 and exits 0', async (t) => {
  // Turns that do not outlive the process; the default on SQLite parks them instead (durable-sqlite.test.ts).
  const { address, exited, logs, kill } = await startBuilt(t, { shutdown: { running_turns: 'cancel' } })

  const socket = await TestSocket.open(`${address.replace(/^http/, 'ws')}/v1/ws`, ['tollgate.v1'], {})
  const { turn_id: turnId } = await socket.request({ type: 'turn.start', message: 'stop me' })
  // The demo's first call needs approval: the turn is now paused in the middle, waiting for a person.
  await socket.waitForEvent(turnId, (e) => e.kind === 'approval.requested', 15_000)
  kill('SIGTERM')

  const events = await socket.waitForTerminal(turnId, 15_000)
  const terminal = events.at(-1)?.event
  assert.deepEqual(terminal, { kind: 'turn.cancelled', reason: 'server shutting down' })
  assert.ok(events.some((e) => e.event.kind === 'approval.resolved' && e.event.decision === 'cancelled'), 'the pending approval was resolved as cancelled')
  assert.equal(await socket.closed(15_000), 1001)
  assert.deepEqual(await exited, { code: 0, signal: null })
  assert.match(logs(), /"signal":"SIGTERM"/)
})

test('SIGTERM with a browser-style spare connection open (never sent a request) and an idle keep-alive one still exits 0 before the shutdown timeout', async (t) => {
  // A timed-out shutdown exits 1 ("killed by timeout"): exit code 0 is the proof the close did not wait.
  const { address, exited, logs, kill } = await startBuilt(t, { server: { shutdown_timeout_ms: 5000 } })
  const { hostname, port } = new URL(address)
  const spare = connect(Number(port), hostname)
  await once(spare, 'connect')
  const keptAlive = connect(Number(port), hostname)
  await once(keptAlive, 'connect')
  keptAlive.write(`GET /healthz HTTP/1.1\r\nHost: ${hostname}:${port}\r\nConnection: keep-alive\r\n\r\n`)
  const [answer] = await once(keptAlive, 'data') as [Buffer]
  assert.match(answer.toString('latin1'), /^HTTP\/1\.1 200 /)
  const closedByServer = (s: Socket): Promise<void> => new Promise((resolve) => { s.on('close', () => { resolve() }) })
  const bothClosed = Promise.all([closedByServer(spare), closedByServer(keptAlive)])
  t.after(() => { spare.destroy(); keptAlive.destroy() })

  kill('SIGTERM')
  assert.deepEqual(await exited, { code: 0, signal: null }, `output:\n${logs()}`)
  await bothClosed
  assert.doesNotMatch(logs(), /killed by timeout/)
})

/** Pids of live processes whose environment holds `entry` (a variable only this test sets). */
async function processesWithEnv (entry: string): Promise<number[]> {
  const found: number[] = []
  for (const name of await readdir('/proc')) {
    if (!/^\d+$/.test(name)) continue
    const environ = await readFile(`/proc/${name}/environ`, 'utf8').catch(() => '')
    const stat = await readFile(`/proc/${name}/stat`, 'utf8').catch(() => '')
    const zombie = stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) === 'Z'
    if (!zombie && environ.split('\0').includes(entry)) found.push(Number(name))
  }
  return found
}

test('npm start hands SIGTERM to the gateway itself: the gateway shuts down gracefully and no server is left running', async (t) => {
  const workspace = await mkdtemp(join(tmpdir(), 'tollgate-npm-start-'))
  const configFile = join(workspace, 'tollgate.json')
  await writeFile(configFile, JSON.stringify({ store: { sqlite: { path: join(workspace, 'data', 'tollgate.db') } } }))
  const marker = `TOLLGATE_CONFIG=${configFile}`
  // --ignore-scripts skips prestart (the full build): before() compiled dist/ already.
  const npm = spawn('npm', ['start', '--ignore-scripts', '--silent'], {
    env: { ...process.env, TOLLGATE_PORT: '0', TOLLGATE_HOST: '127.0.0.1', TOLLGATE_WORKSPACE: workspace, TOLLGATE_LOG_LEVEL: 'info', TOLLGATE_CONFIG: configFile },
    stdio: ['ignore', 'pipe', 'pipe']
  })
  t.after(async () => {
    for (const pid of await processesWithEnv(marker)) process.kill(pid, 'SIGKILL')
    await rm(workspace, { recursive: true, force: true })
  })
  let logs = ''
  npm.stderr.on('data', (c: Buffer) => { logs += c.toString('utf8') })
  const npmExited = once(npm, 'exit')
  await new Promise<void>((resolve, reject) => {
    npm.stdout.on('data', (c: Buffer) => {
      logs += c.toString('utf8')
      if (logs.includes('tollgate listening on')) resolve()
    })
    npm.on('exit', () => reject(new Error(`npm start exited early; output:\n${logs}`)))
  })
  const servers = (await processesWithEnv(marker)).filter((pid) => pid !== npm.pid)
  assert.equal(servers.length, 1, `one gateway process besides npm, found ${servers.join(', ')}`)

  npm.kill('SIGTERM')
  await npmExited
  await eventually(async () => (await processesWithEnv(marker)).length === 0, { what: 'the gateway started by npm to exit', timeoutMs: 20_000 })
  assert.match(logs, /"signal":"SIGTERM"/, 'the gateway itself received SIGTERM and shut down gracefully')
})
