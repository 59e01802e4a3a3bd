/**
 * `tollgate acp`: Tollgate as an Agent Client Protocol agent on stdin/stdout (newline-delimited
 * JSON-RPC), for editors that start agents as processes (Zed's `agent_servers`, JetBrains, Neovim
 * plugins). Each prompt runs as a turn on the gateway over the WebSocket protocol, owned by this
 * process; the mapping lives in src/acp/. stdout carries protocol only: notes go to stderr.
 */
import { Readable, Writable } from 'node:stream'
import { parseArgs } from 'node:util'
import { ndJsonStream } from '@agentclientprotocol/sdk'
import { TollgateClientError, type TollgateClient } from '@tollgate/client'
import { createNodeClient } from '@tollgate/client/node'
import type { HistoryMessage } from '../schemas/session.js'
import { createAcpAgent } from '../src/acp/agent.js'
import type { AcpBackend } from '../src/acp/backend.js'
import { tollgateVersion } from '../src/acp/version.js'

export const ACP_HELP = `usage: tollgate acp [options]

Speak the Agent Client Protocol (v1) on stdin/stdout, running each prompt as a Tollgate turn.
Start it from an editor (see docs/guides/editors.md); the token comes from TOLLGATE_TOKEN.

options:
  --url URL        gateway base URL (env TOLLGATE_URL, default http://127.0.0.1:8080)
  --agent NAME     agent to run (default: the gateway's default agent)
  -h, --help       show this help
`

/** The gateway over its WebSocket protocol (turns, answers, cancels, steering) and one HTTP read (a session's history). */
export function websocketBackend (client: TollgateClient, url: string, token: string | undefined): AcpBackend {
  return {
    startTurn: async ({ message, sessionId, agent }) => {
      const stream = await client.startTurn({ message, session_id: sessionId, ...(agent === undefined ? {} : { agent }) })
      return { turnId: stream.turnId, events: stream }
    },
    answer: async (requestId, answer) => { await client.respond(requestId, answer.decision, answer.replacement) },
    cancel: async (turnId) => { await client.cancel(turnId) },
    // Reading a turn that is ending answers once it has released its session.
    released: async (turnId) => { await client.getTurn(turnId) },
    steer: async (turnId, message) => { await client.steer(turnId, message) },
    history: async (sessionId) => {
      const res = await fetch(`${url.replace(/\/+$/, '')}/v1/sessions/${encodeURIComponent(sessionId)}`, {
        headers: token === undefined ? {} : { authorization: `Bearer ${token}` }
      })
      if (res.status === 404) return null
      if (!res.ok) throw new TollgateClientError('HTTP', `GET /v1/sessions answered ${res.status}`, res.status)
      return ((await res.json()) as { history: HistoryMessage[] }).history
    }
  }
}

export async function acpMain (args: string[]): Promise<number> {
  let values
  try {
    ({ values } = parseArgs({
      args,
      options: { url: { type: 'string' }, agent: { type: 'string' }, help: { type: 'boolean', short: 'h' } }
    }))
  } catch (err) {
    process.stderr.write(`tollgate acp: ${(err as Error).message}\n\n${ACP_HELP}`)
    return 2
  }
  if (values.help === true) {
    process.stderr.write(ACP_HELP)
    return 0
  }
  const url = values.url ?? process.env.TOLLGATE_URL ?? 'http://127.0.0.1:8080'
  const token = process.env.TOLLGATE_TOKEN === '' ? undefined : process.env.TOLLGATE_TOKEN
  let client: TollgateClient
  try {
    client = createNodeClient({ url, token, clientName: 'tollgate-acp' })
  } catch (err) {
    process.stderr.write(`tollgate acp: ${(err as Error).message}\n`)
    return 2
  }
  const app = createAcpAgent(websocketBackend(client, url, token), {
    ...(values.agent === undefined ? {} : { agent: values.agent }),
    version: tollgateVersion(),
    warn: (message) => { process.stderr.write(`tollgate acp: ${message}\n`) }
  })
  const stream = ndJsonStream(
    Writable.toWeb(process.stdout) as WritableStream<Uint8Array>,
    Readable.toWeb(process.stdin) as ReadableStream<Uint8Array>
  )
  const connection = app.connect(stream)
  // The editor closing stdin ends the connection; the socket's close then cancels running turns (it owns them).
  await connection.closed
  client.close()
  return 0
}
