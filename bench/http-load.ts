/**
 * HTTP load driver for the servers under test (Tollgate and the AI SDK peer): POSTs one turn per
 * request and waits for the final answer, at a fixed concurrency, over kept-alive undici
 * connections. A turn counts only if the answer is a completed turn with the expected text.
 */
import { Agent, request } from 'undici'
import { runClosedLoop } from './closed-loop.js'
import { announceReady, serveCommands } from './ipc.js'
import { FINAL_TEXT } from './workload.js'

async function main (): Promise<void> {
  const agents = new Map<number, Agent>()
  const agentFor = (connections: number): Agent => {
    let agent = agents.get(connections)
    if (agent === undefined) {
      agent = new Agent({ connections, headersTimeout: 30_000, bodyTimeout: 30_000 })
      agents.set(connections, agent)
    }
    return agent
  }

  serveCommands({
    run: async (m) => {
      const concurrency = Number(m.concurrency)
      const dispatcher = agentFor(concurrency)
      const url = String(m.url)
      const body = JSON.stringify(m.body)
      const turn = async (): Promise<void> => {
        const res = await request(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body, dispatcher })
        const text = await res.body.text()
        if (res.statusCode !== 200) throw new Error(`HTTP ${res.statusCode}: ${text.slice(0, 300)}`)
        const turn = JSON.parse(text) as { status?: string, final_text?: string }
        if (turn.status !== 'completed' || turn.final_text !== FINAL_TEXT) throw new Error(`unexpected turn: ${text.slice(0, 300)}`)
      }
      return { ...await runClosedLoop({ concurrency, warmupMs: Number(m.warmupMs), durationMs: Number(m.durationMs), turn }) }
    },
    close: async () => {
      for (const a of agents.values()) await a.close()
      return {}
    }
  })
  announceReady()
}

void main()
