import { test } from 'node:test'
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { startGateway, type TestGateway } from '../helpers/gateway.js'
import { createProbes, probeOverrides } from '../helpers/tools.js'
import { defineTool, ok } from '../../src/tools/contract.js'

async function setup (t: { after: (fn: () => Promise<void>) => void }): Promise<TestGateway> {
  const probes = createProbes()
  const g = await startGateway({ tools: probes.tools, overrides: probeOverrides() })
  t.after(async () => { await g.close() })
  return g
}

interface Run { code: number | null, stdout: string, stderr: string }

/** Runs the real `tollgate` bin with `stdin` piped in, as a person typing ahead would. */
async function chat (args: string[], stdin: string, env: Record<string, string> = {}): Promise<Run> {
  const child = spawn(process.execPath, ['bin/tollgate.js', 'chat', ...args], { env: { ...process.env, ...env }, stdio: ['pipe', 'pipe', 'pipe'] })
  let stdout = ''
  let stderr = ''
  child.stdout.on('data', (c: Buffer) => { stdout += c.toString('utf8') })
  child.stderr.on('data', (c: Buffer) => { stderr += c.toString('utf8') })
  child.stdin.end(stdin)
  const timer = setTimeout(() => { child.kill('SIGKILL') }, 30_000)
  const code = await new Promise<number | null>((resolve) => child.on('close', resolve))
  clearTimeout(timer)
  return { code, stdout, stderr }
}

test('the terminal client streams a turn, asks about the approval at the prompt and runs the tool on y', async (t) => {
  const g = await setup(t)
  g.provider.enqueue({ text: 'Let me check. ', toolCalls: [{ id: 'a', name: 'risky', arguments: { label: 'cli' } }] }, { text: 'All done.' })
  const run = await chat(['--url', g.url], 'please check\ny\n')
  assert.equal(run.code, 0, run.stderr)
  assert.match(run.stdout, /── turn turn_\S+ \(agent default, session ses_\S+\)/)
  assert.match(run.stdout, /Let me check\./)
  assert.match(run.stdout, /\? risky needs approval; it runs with exactly these arguments:\n {2}label:\n {4}│ cli\n/)
  assert.match(run.stdout, /you> please check\n/)
  assert.match(run.stdout, /allow\? \[y\]es \/ \[n\]o \/ \[a\]lways \/ \[e\]dit: y\n/)
  assert.doesNotMatch(run.stdout, /disconnected/)
  assert.match(run.stdout, /→ yes \(ws:local\/local\)/)
  assert.match(run.stdout, /▶ risky \{"label":"cli"\}/)
  assert.match(run.stdout, /■ risky ok \(\d+ ms\)\n {2}│ done cli/)
  assert.match(run.stdout, /All done\.\n✓ completed/)
})

test('the terminal client shows both deceptions whole, escapes and every line, and offers always for the exact command', async (t) => {
  const g = await setup(t)
  const kv = 'echo \'password="\'; touch PWN_KV; echo \'"\''
  const url = 'echo http://u:$(touch${IFS}PWN_URL)@example.com'
  const command = `${kv}\n${url}\u202E${' '.repeat(300)}; touch PWN_TAIL`
  g.provider.enqueue({ toolCalls: [{ id: 'a', name: 'shell', arguments: { command } }] }, { text: 'ok' })
  const run = await chat(['--url', g.url], 'deceive me\nn\n')
  assert.equal(run.code, 0, run.stderr)
  const shown = `  command:\n    │ ${kv}⏎\n    │ ${url}‹U+202E›${' '.repeat(300)}; touch PWN_TAIL\n`
  assert.ok(run.stdout.includes(shown), run.stdout)
  assert.match(run.stdout, /allow\? \[y\]es \/ \[n\]o \/ \[a\]lways \(this exact command\) \/ \[e\]dit: n\n/)
  assert.match(run.stdout, /■ shell denied/)
})

test('answering a (always) allowlists the tool for the chat\'s session, so the next message runs it without asking', async (t) => {
  const g = await setup(t)
  const call = { toolCalls: [{ id: 'a', name: 'risky', arguments: { label: 'again' } }] }
  g.provider.enqueue(call, { text: 'first done' }, call, { text: 'second done' })
  const run = await chat(['--url', g.url], 'first\na\nsecond\n')
  assert.equal(run.code, 0, run.stderr)
  assert.equal(run.stdout.match(/needs approval/g)?.length, 1, 'asked once')
  assert.equal(run.stdout.match(/■ risky ok/g)?.length, 2, 'ran twice')
  const sessionId = /session (ses_\S+)\)/.exec(run.stdout)?.[1] ?? ''
  const session = await g.http('GET', `/v1/sessions/${sessionId}`)
  assert.deepEqual(session.body.always_allowed_tools, ['risky'])
  assert.equal(session.body.turn_ids.length, 2, 'both messages went to the same session')
})

test('answering e sends the next line as the replacement result and the tool does not run', async (t) => {
  const g = await setup(t)
  g.provider.enqueue({ toolCalls: [{ id: 'a', name: 'risky', arguments: { label: 'x' } }] }, { text: 'ok' })
  const run = await chat(['--url', g.url, 'edit this'], 'e\nthe operator wrote this\n')
  assert.equal(run.code, 0, run.stderr)
  assert.match(run.stdout, /■ risky replaced \(\d+ ms\)\n {2}│ the operator wrote this/)
})

test('an unclear answer is asked again, and input closing at the prompt answers no', async (t) => {
  const g = await setup(t)
  g.provider.enqueue({ toolCalls: [{ id: 'a', name: 'risky', arguments: { label: 'x' } }] }, { text: 'fine' })
  const run = await chat(['--url', g.url, 'go'], 'maybe\n')
  assert.equal(run.code, 0, run.stderr)
  assert.match(run.stdout, /please answer y, n, a or e/)
  assert.match(run.stdout, /\(input closed: answering no\)/)
  assert.match(run.stdout, /■ risky denied/)
})

test('model text cannot drive the terminal: control and bidi characters are stripped', async (t) => {
  const g = await setup(t)
  g.provider.enqueue({ text: 'plain \u001b[2J\u001b]0;pwned\u0007red\u202e text' })
  const run = await chat(['--url', g.url, 'hi'], '')
  assert.equal(run.code, 0, run.stderr)
  assert.match(run.stdout, /plain \[2J\]0;pwnedred text/)
  // eslint-disable-next-line no-control-regex -- control characters are what this pattern finds
  assert.doesNotMatch(run.stdout, /[\u001b\u0007\u202e]/)
})

test('a one-shot turn that fails exits with 1, and an unreachable gateway is reported', async (t) => {
  const g = await setup(t)
  g.provider.enqueue({ status: 400, errorBody: JSON.stringify({ error: { message: 'bad request' } }) })
  const failed = await chat(['--url', g.url, 'hi'], '')
  assert.equal(failed.code, 1)
  assert.match(failed.stdout, /✗ failed \(PROVIDER_/)
  const unreachable = await chat(['hi'], '', { TOLLGATE_URL: 'http://127.0.0.1:9' })
  assert.equal(unreachable.code, 1)
  assert.match(unreachable.stdout, /cannot reach the gateway at http:\/\/127\.0\.0\.1:9: TIMEOUT: not connected after 5000 ms/)
})

/** A chat whose stdin stays open, for tests that act while it waits at a prompt. */
function openChat (args: string[]): {
  child: ReturnType<typeof spawn>, output: () => string, waitFor: (re: RegExp) => Promise<RegExpExecArray>
} {
  const child = spawn(process.execPath, ['bin/tollgate.js', 'chat', ...args], { stdio: ['pipe', 'pipe', 'pipe'] })
  let stdout = ''
  let exited = false
  // Each waiter looks again whenever something printed or the process ended: no polling.
  const wakers = new Set<() => void>()
  const wake = (): void => { for (const w of wakers) w() }
  child.stdout?.on('data', (c: Buffer) => {
    stdout += c.toString('utf8')
    wake()
  })
  const timer = setTimeout(() => { child.kill('SIGKILL') }, 30_000)
  child.on('close', () => {
    clearTimeout(timer)
    exited = true
    wake()
  })
  return {
    child,
    output: () => stdout,
    waitFor: async (re) => await new Promise<RegExpExecArray>((resolve, reject) => {
      const done = (): void => {
        wakers.delete(look)
        clearTimeout(deadline)
      }
      const deadline = setTimeout(() => {
        done()
        reject(new Error(`never printed ${String(re)}; output:\n${stdout}`))
      }, 20_000)
      function look (): void {
        const m = re.exec(stdout)
        if (m !== null) {
          done()
          resolve(m)
        } else if (exited) {
          done()
          reject(new Error(`exited without printing ${String(re)}; output:\n${stdout}`))
        }
      }
      wakers.add(look)
      look()
    })
  }
}

test('a question answered elsewhere is withdrawn from the prompt and the turn goes on', async (t) => {
  const g = await setup(t)
  g.provider.enqueue({ toolCalls: [{ id: 'a', name: 'risky', arguments: { label: 'elsewhere' } }] }, { text: 'done' })
  const chatProcess = openChat(['--url', g.url])
  chatProcess.child.stdin?.write('go\n')
  const [, turnId] = await chatProcess.waitFor(/── turn (turn_\S+)/)
  await chatProcess.waitFor(/allow\? \[y\]es/)
  const events = (await g.http('GET', `/v1/turns/${turnId ?? ''}/events`)).body.events as Array<{ event: { kind: string, request_id?: string } }>
  const requestId = events.find((e) => e.event.kind === 'approval.requested')?.event.request_id ?? ''
  const answered = await g.http('POST', `/v1/approvals/${requestId}`, { decision: 'yes' })
  assert.equal(answered.status, 200)
  await chatProcess.waitFor(/\(withdrawn: it was answered yes by rest:local\/local; not asking any more\)/)
  await chatProcess.waitFor(/✓ completed/)
  assert.match(chatProcess.output(), /→ yes \(rest:local\/local\)/)
  assert.match(chatProcess.output(), /■ risky ok/)
  chatProcess.child.stdin?.end()
  const code = await new Promise((resolve) => chatProcess.child.on('close', resolve))
  assert.equal(code, 0)
})

test('SIGINT (Ctrl-C) cancels the running turn and the chat keeps reading messages', async (t) => {
  const g = await setup(t)
  g.provider.enqueue({ toolCalls: [{ id: 'a', name: 'probe', arguments: { label: 'slow', ms: 30_000 } }] }, { text: 'second answer' })
  const chatProcess = openChat(['--url', g.url])
  chatProcess.child.stdin?.write('long one\n')
  await chatProcess.waitFor(/▶ probe/)
  chatProcess.child.kill('SIGINT')
  await chatProcess.waitFor(/✗ cancelled: cancelled by client/)
  chatProcess.child.stdin?.end('next one\n')
  await chatProcess.waitFor(/second answer\n✓ completed/)
  const code = await new Promise((resolve) => chatProcess.child.on('close', resolve))
  assert.equal(code, 0)
})

test('the terminal client shows a long-running command\'s progress lines before its result', async (t) => {
  const g = await startGateway({
    overrides: {
      risk_profiles: { default: { level: 'full' } },
      tools: { shell: { require_approval_for_medium_risk: false, progress_after_ms: 0 } }
    }
  })
  t.after(async () => { await g.close() })
  const command = 'echo step one; sleep 0.4; echo step two; sleep 0.4'
  g.provider.enqueue({ toolCalls: [{ id: 'a', name: 'shell', arguments: { command } }] }, { text: 'Counted.' })
  const run = await chat(['--url', g.url], 'count\n')
  assert.equal(run.code, 0, run.stderr)
  assert.match(run.stdout, /▶ shell .*\n {2}⋯ step one\n {2}⋯ step two\n■ shell ok \(\d+ ms\)\n {2}│ step one\n {2}│ step two/)
})

test('the terminal client shows a plan a tool reports as one progress line: tasks done and the one under way', async (t) => {
  const todo = defineTool({
    name: 'todo_write',
    description: 'Replace the task list',
    parameters: { type: 'object', properties: {}, additionalProperties: false },
    async execute (_args, ctx) {
      ctx.progress?.({ plan: [{ content: 'Read the notes', status: 'completed' }, { content: 'Write the summary', status: 'in_progress' }, { content: 'Send it', status: 'pending' }] })
      return ok('3 tasks')
    }
  })
  const g = await startGateway({ tools: [todo], overrides: { agents: { default: { tools: ['todo_write'] } }, risk_profiles: { default: { auto_approve: ['todo_write'] } } } })
  t.after(async () => { await g.close() })
  g.provider.enqueue({ toolCalls: [{ id: 'a', name: 'todo_write', arguments: {} }] }, { text: 'Planned.' })
  const run = await chat(['--url', g.url], 'plan it\n')
  assert.equal(run.code, 0, run.stderr)
  assert.match(run.stdout, /▶ todo_write .*\n {2}⋯ plan 1\/3 done, now: Write the summary\n■ todo_write ok/)
})
