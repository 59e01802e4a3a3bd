/**
 * Tools for lifecycle tests, registered through the public embedding API (buildServer({ tools })):
 * they record what actually ran, so tests can tell "executed" from "reported".
 */
import { deepMerge } from '../../src/core/config.js'
import { startGateway, type StartOptions, type TestGateway } from './gateway.js'
import { defineTool, fail, ok, type Tool } from '../../src/tools/contract.js'

export interface ProbeRun {
  tool: string
  label: string
  args: Record<string, unknown>
  finished: boolean
  aborted: boolean
}

export interface Probes {
  runs: ProbeRun[]
  tools: Tool[]
}

function sleep (ms: number, signal: AbortSignal): Promise<boolean> {
  return new Promise((resolve) => {
    if (signal.aborted) {
      resolve(false)
      return
    }
    const timer = setTimeout(() => resolve(true), ms)
    signal.addEventListener('abort', () => { clearTimeout(timer); resolve(false) }, { once: true })
  })
}

/** `probe` (auto-approvable), `risky` (needs approval by default) and `quiet` (empty output). */
export function createProbes (): Probes {
  const runs: ProbeRun[] = []
  const make = (name: string): Tool => defineTool({
    name,
    description: `test tool ${name}: waits ms, then returns output`,
    parameters: {
      type: 'object',
      properties: {
        label: { type: 'string' },
        ms: { type: 'integer', minimum: 0 },
        output: { type: 'string' },
        fail: { type: 'boolean' }
      },
      required: ['label'],
      additionalProperties: false
    },
    async execute (args, ctx) {
      const a = args as { label: string, ms?: number, output?: string, fail?: boolean }
      const run: ProbeRun = { tool: name, label: a.label, args, finished: false, aborted: false }
      runs.push(run)
      const completed = await sleep(a.ms ?? 0, ctx.signal)
      if (!completed) {
        run.aborted = true
        return fail('aborted')
      }
      run.finished = true
      if (a.fail === true) return fail(`probe ${a.label} failed`)
      return ok(a.output ?? (name === 'quiet' ? '' : `done ${a.label}`))
    }
  })
  return { runs, tools: [make('probe'), make('risky'), make('quiet')] }
}

/** Agent/risk overrides that admit the probe tools; `probe` and `quiet` auto-approved, `risky` prompts. */
export function probeOverrides (extra: Record<string, unknown> = {}): unknown {
  return deepMerge({
    agents: { default: { tools: ['probe', 'risky', 'quiet', 'shell', 'file_read', 'file_write'] } },
    risk_profiles: { default: { auto_approve: ['probe', 'quiet', 'file_read'] } }
  }, extra)
}

/** A gateway with the probe tools admitted; closed when the test ends. */
export async function startProbeGateway (
  t: { after: (fn: () => Promise<void>) => void },
  extra: Record<string, unknown> = {},
  options: Omit<StartOptions, 'tools' | 'overrides'> = {}
): Promise<{ g: TestGateway, probes: Probes }> {
  const probes = createProbes()
  const g = await startGateway({ ...options, tools: probes.tools, overrides: probeOverrides(extra) })
  t.after(async () => { await g.close() })
  return { g, probes }
}
