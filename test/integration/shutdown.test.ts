/**
 * Graceful shutdown of the built server (`npm start` runs exactly dist/src/main.js after the same
 * tsc build): SIGTERM mid-turn cancels the turn cleanly, delivers its terminal event, closes the
 * socket with 1001 and exits 0.
 */
import { before, test } from 'node:test'
import assert from 'node:assert/strict'
import { execFile, spawn } from 'node:child_process'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { TestSocket } from '../helpers/gateway.js'

const run = promisify(execFile)

before(async () => {
  await run(process.execPath, ['node_modules/typescript/bin/tsc', '-p', 'tsconfig.build.json'], { timeout: 240_000 })
})

test('SIGTERM to the built server mid-turn cancels the turn, delivers turn.cancelled, closes the socket with 1001 and exits 0', async (t) => {
  const workspace = await mkdtemp(join(tmpdir(), 'tollgate-shutdown-'))
  // The embedded SQLite store goes to the scratch folder, not the checkout's ./data.
  const configFile = join(workspace, 'tollgate.json')
  // Turns that do not outlive the process; the default on SQLite parks them instead (durable-sqlite.test.ts).
  await writeFile(configFile, JSON.stringify({ store: { sqlite: { path: join(workspace, 'data', 'tollgate.db') } }, shutdown: { running_turns: 'cancel' } }))
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

  const socket = await TestSocket.open(`${address.replace(/^http/, 'ws')}/v1/ws`, ['tollgate.v1'], {})
  const { turn_id: turnId } = await socket.request({ type: 'turn.start', message: 'stop me' })
  // The demo's first call needs approval: the turn is now paused in the middle, waiting for a person.
  await socket.waitForEvent(turnId, (e) => e.kind === 'approval.requested', 15_000)
  child.kill('SIGTERM')

  const events = await socket.waitForTerminal(turnId, 15_000)
  const terminal = events.at(-1)?.event
  assert.deepEqual(terminal, { kind: 'turn.cancelled', reason: 'server shutting down' })
  assert.ok(events.some((e) => e.event.kind === 'approval.resolved' && e.event.decision === 'cancelled'), 'the pending approval was resolved as cancelled')
  assert.equal(await socket.closed(15_000), 1001)
  assert.deepEqual(await exited, { code: 0, signal: null })
  assert.match(logs, /"signal":"SIGTERM"/)
})
