/**
 * Extra baseline row: the bare turn (bare-turn.ts) in a loop inside this process — no HTTP hop
 * to reach it, so no HTTP service can match it; the bare Fastify route is the fair baseline.
 * Same concurrency and closed loop as the others.
 */
import { runClosedLoop } from './closed-loop.js'
import { announceReady, childOptions, serveCommands } from './ipc.js'
import { createBareTurns } from './bare-turn.js'
import { TURN_MESSAGE } from './workload.js'

interface Options { providerUrl: string, stream: boolean }

async function main (): Promise<void> {
  const bare = createBareTurns(childOptions<Options>())
  serveCommands({
    run: async (m) => {
      const message = typeof m.message === 'string' ? m.message : TURN_MESSAGE
      const turn = async (): Promise<void> => { await bare.run(message) }
      return {
        ...await runClosedLoop({
          concurrency: Number(m.concurrency), warmupMs: Number(m.warmupMs), durationMs: Number(m.durationMs), turn
        })
      }
    },
    tools: () => ({ runs: bare.toolRuns })
  })
  announceReady()
}

void main()
