/**
 * Drives Tollgate's ACP agent with the official SDK's client: over the real `tollgate acp` stdio
 * command, or over a WebSocket to `/v1/acp`. Records every `session/update` and answers
 * permission requests as the test says.
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { once } from 'node:events'
import { Readable, Writable } from 'node:stream'
import { fileURLToPath } from 'node:url'
import {
  client, ndJsonStream,
  type ClientContext, type RequestPermissionRequest, type RequestPermissionResponse, type SessionNotification, type Stream
} from '@agentclientprotocol/sdk'

export type PermissionAnswer = (request: RequestPermissionRequest) => RequestPermissionResponse | Promise<RequestPermissionResponse>

export interface AcpHarness {
  updates: SessionNotification[]
  permissions: RequestPermissionRequest[]
  /** Runs `op` with a connected SDK client context; the connection closes after it. */
  run: <T>(op: (ctx: ClientContext) => Promise<T>) => Promise<T>
}

export function acpHarness (stream: () => Stream, answer: PermissionAnswer = () => ({ outcome: { outcome: 'cancelled' } })): AcpHarness {
  const updates: SessionNotification[] = []
  const permissions: RequestPermissionRequest[] = []
  const app = client({ name: 'tollgate-test' })
    .onNotification('session/update', ({ params }) => { updates.push(params) })
    .onRequest('session/request_permission', async ({ params }) => {
      permissions.push(params)
      return await answer(params)
    })
  return { updates, permissions, run: async (op) => await app.connectWith(stream(), op) }
}

const BIN = fileURLToPath(new URL('../../bin/tollgate.js', import.meta.url))

/** `tollgate acp --url <url>` as a child process; its stdio is the stream. */
export interface AcpProcess { child: ChildProcess, stream: () => Stream, stderr: () => string }

export function spawnAcp (url: string, env: Record<string, string> = {}, args: string[] = []): AcpProcess {
  const child = spawn(process.execPath, [BIN, 'acp', '--url', url, ...args], {
    env: { ...process.env, TOLLGATE_TOKEN: '', ...env }, stdio: ['pipe', 'pipe', 'pipe']
  })
  let stderr = ''
  child.stderr?.on('data', (c: Buffer) => { stderr += c.toString('utf8') })
  return {
    child,
    stream: () => ndJsonStream(
      Writable.toWeb(child.stdin as Writable) as WritableStream<Uint8Array>,
      Readable.toWeb(child.stdout as Readable) as ReadableStream<Uint8Array>
    ),
    stderr: () => stderr
  }
}

export async function stopChild (child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return
  child.stdin?.end()
  const exited = once(child, 'exit')
  const timer = setTimeout(() => { child.kill('SIGKILL') }, 5000)
  await exited
  clearTimeout(timer)
}

/** The kinds of updates of one session, in order, consecutive message chunks as one. */
export function updateKinds (updates: readonly SessionNotification[]): string[] {
  const kinds = updates.map((u) => u.update.sessionUpdate === 'tool_call_update' ? `tool_call_update:${u.update.status ?? ''}` : u.update.sessionUpdate)
  return kinds.filter((k, i) => !(k === 'agent_message_chunk' && kinds[i - 1] === k))
}

export function messageText (updates: readonly SessionNotification[]): string {
  return updates.map((u) => u.update.sessionUpdate === 'agent_message_chunk' && u.update.content.type === 'text' ? u.update.content.text : '').join('')
}
