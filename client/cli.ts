/**
 * `tollgate chat` (also `npm run chat`): the terminal client. Streams a turn's text and tool
 * cards and asks at the prompt about approvals. The token comes from TOLLGATE_TOKEN (preferred:
 * a --token argument is visible to other local users in the process list).
 */
import { readFile } from 'node:fs/promises'
import { parseArgs } from 'node:util'
import { acpMain } from './acp.js'
import { verifyAuditChain } from './audit-verify.js'
import { DEFAULT_ANSWER_GUARD_MS, startChat } from './chat.js'
import { TollgateClientError } from '@tollgate/client'
import { createNodeClient } from '@tollgate/client/node'

const HELP = `usage: tollgate chat [options] [message...]
       tollgate acp [--url URL] [--agent NAME]   (Agent Client Protocol on stdio; see tollgate acp --help)
       tollgate audit verify FILE

audit verify: checks an audit chain exported from GET /v1/audit?format=jsonl; exits 0 when it
holds, 1 naming the first broken line.

Talk to a Tollgate gateway. With a message, runs that one turn and exits (0 when it completed);
without, reads messages line by line (/new: new session, /quit or Ctrl-D: end).
Approvals are asked at the prompt: [y]es, [n]o, [a]lways (for the rest of the session), [e]dit.
In a terminal, a line typed while a turn runs steers it: the model reads it at its next call.
Ctrl-C cancels the running turn.

options:
  --url URL        gateway base URL (env TOLLGATE_URL, default http://127.0.0.1:8080)
  --token TOKEN    bearer token (prefer env TOLLGATE_TOKEN)
  --agent NAME     agent to run (default: the gateway's default agent)
  --session ID     continue this session
  --detach         keep turns running if this client disconnects
  --answer-guard-ms MS
                   stray-key guard (default ${DEFAULT_ANSWER_GUARD_MS} in a terminal, 0 for piped input):
                   a line entered within MS after a question was withdrawn (expired, answered
                   elsewhere, turn cancelled) is ignored, and a new question takes answers only
                   after it has been on screen for MS; 0 turns the timing off (max 60000)
  -h, --help       show this help
`

async function main (argv: string[]): Promise<number> {
  const [command, ...rest] = argv
  if (command === undefined || command === 'help' || command === '--help' || command === '-h') {
    process.stdout.write(HELP)
    return command === undefined ? 2 : 0
  }
  if (command === 'acp') return await acpMain(rest)
  if (command === 'audit') return await auditCommand(rest)
  if (command !== 'chat') {
    process.stderr.write(`tollgate: unknown command ${JSON.stringify(command)}\n\n${HELP}`)
    return 2
  }
  let parsed
  try {
    parsed = parseArgs({
      args: rest,
      allowPositionals: true,
      options: {
        url: { type: 'string' },
        token: { type: 'string' },
        agent: { type: 'string' },
        session: { type: 'string' },
        detach: { type: 'boolean' },
        'answer-guard-ms': { type: 'string' },
        help: { type: 'boolean', short: 'h' }
      }
    })
  } catch (err) {
    process.stderr.write(`tollgate: ${(err as Error).message}\n\n${HELP}`)
    return 2
  }
  const { values, positionals } = parsed
  if (values.help === true) {
    process.stdout.write(HELP)
    return 0
  }
  let answerGuardMs: number | undefined
  const guard = values['answer-guard-ms']
  if (guard !== undefined) {
    if (!/^\d{1,5}$/.test(guard) || Number(guard) > 60_000) {
      process.stderr.write(`tollgate: --answer-guard-ms takes a whole number of milliseconds from 0 to 60000\n\n${HELP}`)
      return 2
    }
    answerGuardMs = Number(guard)
  }
  let client
  try {
    client = createNodeClient({
      url: values.url ?? process.env.TOLLGATE_URL ?? 'http://127.0.0.1:8080',
      token: values.token ?? process.env.TOLLGATE_TOKEN,
      clientName: 'tollgate-cli'
    })
  } catch (err) {
    process.stderr.write(`tollgate: ${err instanceof TollgateClientError ? err.message : String(err)}\n`)
    return 2
  }
  const message = positionals.join(' ').trim()
  const chat = startChat({
    client,
    input: process.stdin,
    output: process.stdout,
    terminal: process.stdin.isTTY === true && process.stdout.isTTY === true,
    agent: values.agent,
    sessionId: values.session,
    detach: values.detach,
    ...(answerGuardMs === undefined ? {} : { answerGuardMs }),
    message: message === '' ? undefined : message
  })
  let interrupts = 0
  process.on('SIGINT', () => {
    interrupts += 1
    if (interrupts > 1) process.exit(130)
    chat.interrupt()
    setTimeout(() => { interrupts = 0 }, 2000).unref()
  })
  try {
    return await chat.done
  } finally {
    client.close()
  }
}

async function auditCommand (args: string[]): Promise<number> {
  const [sub, file, ...extra] = args
  if (sub !== 'verify' || file === undefined || extra.length > 0) {
    process.stderr.write('tollgate: usage: tollgate audit verify FILE\n')
    return 2
  }
  let text: string
  try {
    text = await readFile(file, 'utf8')
  } catch (err) {
    process.stderr.write(`tollgate: cannot read ${file}: ${(err as Error).message}\n`)
    return 2
  }
  const result = verifyAuditChain(text)
  if (result.ok) {
    process.stdout.write(`${file}: chain of ${result.entries} entries verified\n`)
    return 0
  }
  process.stderr.write(`${file}:${result.line}: broken chain: ${result.problem}\n`)
  return 1
}

process.exitCode = await main(process.argv.slice(2))
