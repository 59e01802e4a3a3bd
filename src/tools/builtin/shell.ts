/**
 * The `shell` tool: runs one command with `/bin/sh -c` in the turn's workspace, through the
 * launcher (the bubblewrap sandbox unless the operator chose none), in its own process group that
 * the process ledger records, with an allow-listed environment and bounded output. The risk
 * policy runs before anything is spawned. A long-running command's output lines are reported as
 * progress while it runs.
 */
import type { ChildProcess } from 'node:child_process'
import { defineTool, fail, ok, type Tool, type ToolResult } from '../contract.js'
import type { ProcessLedger } from './process-ledger.js'
import { spawnPlan, type Launch, type Launcher, type LaunchPlan } from './sandbox.js'
import { classifyCommand } from './shell-policy.js'
import { lineProgress, type LineProgress } from './shell-progress.js'
import { appendNotice } from './text.js'

export interface ShellOptions {
  timeoutMs: number
  maxOutputBytes: number
  blockHighRisk: boolean
  requireApprovalForMedium: boolean
  envAllowlist: string[]
  /** A command running longer than this streams its output lines to `ToolContext.progress`. */
  progressAfterMs: number
}

export interface ShellToolOptions extends ShellOptions {
  launcher: Launcher
  ledger: ProcessLedger
}

interface ShellArgs {
  command: string
  timeout_ms?: number
  approved?: boolean
}

// Time a process group gets to exit after SIGTERM before it is SIGKILLed.
const KILL_GRACE_MS = 2000
// After the shell exits, how long its output pipes may stay open (held by background children).
const PIPE_GRACE_MS = 200

type RunOutcome =
  | { kind: 'exited', code: number | null, signal: NodeJS.Signals | null }
  | { kind: 'timeout' }
  | { kind: 'cancelled' }
  | { kind: 'spawn-error', message: string }

interface RunResult {
  outcome: RunOutcome
  output: string
}

interface RunOptions {
  timeoutMs: number
  maxOutputBytes: number
  signal: AbortSignal
  /** Records the started process group; answers how to forget it once it is over. */
  record: (pgid: number) => () => void
  /** Output lines as progress; null when nobody listens. */
  progress: LineProgress | null
}

function scrubbedEnv (allowlist: readonly string[], home: string): Record<string, string> {
  const env: Record<string, string> = {}
  for (const name of allowlist) {
    const value = process.env[name]
    if (value !== undefined) env[name] = value
  }
  env.HOME = home
  return env
}

function killGroup (child: ChildProcess, signal: NodeJS.Signals): void {
  if (child.pid === undefined) return
  try {
    process.kill(-child.pid, signal)
  } catch {
    // ESRCH: the group is already gone, which is the state we want.
  }
}

function boundedCollector (maxBytes: number): { push: (chunk: Buffer) => void, text: () => string } {
  const chunks: Buffer[] = []
  let size = 0
  let truncated = false
  return {
    push (chunk) {
      if (truncated) return
      const room = maxBytes - size
      if (chunk.length <= room) {
        chunks.push(chunk)
        size += chunk.length
        return
      }
      chunks.push(chunk.subarray(0, room))
      size = maxBytes
      truncated = true
    },
    text () {
      const text = Buffer.concat(chunks).toString('utf8')
      return truncated ? appendNotice(text, `[output truncated after ${maxBytes} bytes]`) : text
    }
  }
}

/**
 * Runs the command and settles once it is over. Whatever the ending, the whole process group is
 * SIGKILLed on the way out, so no process the call started outlives it.
 */
function runCommand (plan: LaunchPlan, opts: RunOptions): Promise<RunResult> {
  return new Promise((resolve) => {
    const output = boundedCollector(opts.maxOutputBytes)
    const timers: NodeJS.Timeout[] = []
    let stopped: 'timeout' | 'cancelled' | null = null
    let exit: { code: number | null, signal: NodeJS.Signals | null } | null = null
    let settled = false

    const child = spawnPlan(plan)
    let forget = (): void => {}

    const settle = (outcome: RunOutcome): void => {
      if (settled) return
      settled = true
      for (const t of timers) clearTimeout(t)
      opts.signal.removeEventListener('abort', onAbort)
      opts.progress?.close()
      killGroup(child, 'SIGKILL')
      forget()
      resolve({ outcome, output: output.text() })
    }
    const settleAfterExit = (): void => {
      if (stopped !== null) settle({ kind: stopped })
      else settle({ kind: 'exited', code: exit?.code ?? null, signal: exit?.signal ?? null })
    }
    const stop = (reason: 'timeout' | 'cancelled'): void => {
      if (stopped !== null || settled) return
      stopped = reason
      killGroup(child, 'SIGTERM')
      timers.push(setTimeout(() => killGroup(child, 'SIGKILL'), KILL_GRACE_MS))
    }
    const onAbort = (): void => stop('cancelled')

    const progress = opts.progress
    if (progress === null) {
      child.stdout.on('data', output.push)
      child.stderr.on('data', output.push)
    } else {
      child.stdout.on('data', (chunk: Buffer) => { output.push(chunk); progress.stdout(chunk) })
      child.stderr.on('data', (chunk: Buffer) => { output.push(chunk); progress.stderr(chunk) })
    }
    child.on('error', (err) => settle({ kind: 'spawn-error', message: err.message }))
    child.on('exit', (code, signal) => {
      exit = { code, signal }
      // Background children may still hold the pipes; they belong to the call, so end them too.
      timers.push(setTimeout(() => {
        killGroup(child, 'SIGKILL')
        timers.push(setTimeout(() => {
          child.stdout.destroy()
          child.stderr.destroy()
          settleAfterExit()
        }, PIPE_GRACE_MS))
      }, PIPE_GRACE_MS))
    })
    child.on('close', (code, signal) => {
      exit ??= { code, signal }
      settleAfterExit()
    })

    if (child.pid !== undefined) {
      try {
        forget = opts.record(child.pid)
      } catch (err) {
        // Unrecorded, a crash could leave it running: a command is not worth that risk.
        settle({ kind: 'spawn-error', message: `cannot record its process group: ${err instanceof Error ? err.message : String(err)}` })
        return
      }
    }
    timers.push(setTimeout(() => stop('timeout'), opts.timeoutMs))
    if (opts.signal.aborted) onAbort()
    else opts.signal.addEventListener('abort', onAbort, { once: true })
  })
}

/**
 * The call's result. Limits the command ran into (`limitsHit`) are told in the output of a
 * command that succeeded and in the error of one that failed, since the model sees only the
 * error of a failed call.
 */
function toToolResult (result: RunResult, timeoutMs: number, limitsHit: readonly string[]): ToolResult {
  const { outcome, output } = result
  const failed = (reason: string): ToolResult => fail([reason, ...limitsHit].join('; '), output)
  switch (outcome.kind) {
    case 'timeout':
      return failed(`command timed out after ${timeoutMs} ms`)
    case 'cancelled':
      return failed('cancelled')
    case 'spawn-error':
      return failed(`failed to start command: ${outcome.message}`)
    case 'exited':
      if (outcome.code === 0) return ok(limitsHit.reduce((text, hit) => appendNotice(text, `[${hit}]`), output))
      if (outcome.code !== null) return failed(`exit code ${outcome.code}`)
      return failed(`command terminated by signal ${outcome.signal ?? 'unknown'}`)
  }
}

const SANDBOX_NOTE = 'It runs in a sandbox: only the workspace directory is writable, /tmp is private to the command, ' +
  'and the network may be unavailable. '

export function createShellTool (opts: ShellToolOptions): Tool {
  return defineTool<ShellArgs>({
    name: 'shell',
    description: 'Run a shell command (/bin/sh -c) in the workspace directory and return its combined stdout and stderr. ' +
      (opts.launcher.kind === 'bwrap' ? SANDBOX_NOTE : '') +
      'Read-only commands run directly; other commands may need explicit approval and destructive ones are refused.',
    parameters: {
      type: 'object',
      properties: {
        command: { type: 'string', minLength: 1, description: 'The command line to run.' },
        timeout_ms: { type: 'integer', minimum: 1, description: `Timeout in milliseconds (at most ${opts.timeoutMs}).` },
        approved: { type: 'boolean', description: 'Set by the runtime once a person has approved this call.' }
      },
      required: ['command'],
      additionalProperties: false
    },
    // Only commands the policy proves to be a pipeline of read-only commands observe without changing anything.
    effects: (args) => classifyCommand(args.command) === 'low' ? 'read' : 'write',
    async execute (args, ctx) {
      if (ctx.signal.aborted) return fail('cancelled')
      // spawn() throws on a NUL byte; no shell command can contain one anyway.
      if (args.command.includes('\0')) return fail('command must not contain NUL bytes')

      const risk = classifyCommand(args.command)
      if (risk === 'high' && opts.blockHighRisk) return fail('command blocked by policy: high-risk command')
      if (risk === 'medium' && opts.requireApprovalForMedium && args.approved !== true) {
        return fail('command requires explicit approval (approved=true)')
      }

      const timeoutMs = Math.min(args.timeout_ms ?? opts.timeoutMs, opts.timeoutMs)
      let launch: Launch
      try {
        launch = opts.launcher.prepare({
          argv: ['/bin/sh', '-c', args.command],
          workspaceDir: ctx.workspaceDir,
          network: ctx.network,
          env: scrubbedEnv(opts.envAllowlist, ctx.workspaceDir),
          owner: ctx.workspaceOwner
        })
      } catch (err) {
        ctx.log.error({ err }, 'a command could not be given its sandbox')
        return fail('failed to start command: its sandbox could not be prepared')
      }
      let result: RunResult
      try {
        result = await runCommand(launch.plan, {
          timeoutMs,
          maxOutputBytes: opts.maxOutputBytes,
          signal: ctx.signal,
          record: (pgid) => opts.ledger.record(pgid, ctx.turnId),
          progress: ctx.progress === undefined ? null : lineProgress(ctx.progress, opts.progressAfterMs)
        })
      } catch (err) {
        // spawn() throws at once on arguments it refuses; the launch is finished all the same.
        result = { outcome: { kind: 'spawn-error', message: err instanceof Error ? err.message : String(err) }, output: '' }
      }
      return toToolResult(result, timeoutMs, await launch.finish())
    }
  })
}
