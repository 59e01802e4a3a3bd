/**
 * A small reader of the repository's Dockerfile: stages, their instructions and the runtime's
 * environment, so tests can check the image statically and start the gateway the way it would.
 */
import assert from 'node:assert/strict'
import { readFile } from 'node:fs/promises'

export interface Instruction { op: string, args: string }
export interface Stage { from: string, name: string | undefined, instructions: Instruction[] }

export async function stages (): Promise<Stage[]> {
  const text = (await readFile('Dockerfile', 'utf8')).replace(/\\\n/g, ' ')
  const out: Stage[] = []
  for (const raw of text.split('\n')) {
    const line = raw.trim()
    if (line === '' || line.startsWith('#')) continue
    const [op = '', ...rest] = line.split(/\s+/)
    const instruction = { op: op.toUpperCase(), args: rest.join(' ') }
    if (instruction.op === 'FROM') {
      const [image = '', as, name] = rest
      out.push({ from: image, name: as?.toUpperCase() === 'AS' ? name : undefined, instructions: [] })
      continue
    }
    const stage = out.at(-1)
    assert.ok(stage !== undefined, `${instruction.op} before any FROM`)
    stage.instructions.push(instruction)
  }
  return out
}

export function all (stage: Stage, op: string): string[] {
  return stage.instructions.filter((i) => i.op === op).map((i) => i.args)
}

export function execForm (args: string): string[] {
  const json = args.slice(args.indexOf('['))
  const parsed = JSON.parse(json) as unknown
  assert.ok(Array.isArray(parsed) && parsed.every((p) => typeof p === 'string'), `not an exec-form array: ${args}`)
  return parsed as string[]
}

/** The variables the runtime stage's `ENV K=V …` lines set (unquoted values, as this Dockerfile writes them). */
export async function runtimeEnv (): Promise<Record<string, string>> {
  const runtime = (await stages()).at(-1)
  assert.ok(runtime !== undefined)
  const env: Record<string, string> = {}
  for (const args of all(runtime, 'ENV')) {
    for (const pair of args.split(/\s+/).filter((p) => p !== '')) {
      const eq = pair.indexOf('=')
      assert.ok(eq > 0, `ENV ${pair} is not in the K=V form`)
      env[pair.slice(0, eq)] = pair.slice(eq + 1)
    }
  }
  return env
}
