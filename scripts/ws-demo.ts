/**
 * Browser-free WebSocket walk-through: starts a turn on a running gateway, prints every event,
 * and answers each approval request (yes by default; --answer no|always|edit).
 *
 *   npm start                      # in one terminal
 *   npm run demo:ws                # in another (TOLLGATE_URL=http://127.0.0.1:8080 by default)
 */
import { WebSocket } from 'ws'

const args = process.argv.slice(2)
const answerAt = args.indexOf('--answer')
const answer = answerAt === -1 ? 'yes' : args[answerAt + 1] ?? 'yes'
const message = args.filter((a, i) => !a.startsWith('--') && args[i - 1] !== '--answer').join(' ') || 'Hello from the WebSocket demo'
const base = process.env.TOLLGATE_URL ?? 'http://127.0.0.1:8080'
const token = process.env.TOLLGATE_TOKEN
const protocols = token === undefined ? ['tollgate.v1'] : ['tollgate.v1', `bearer.${token}`]

const ws = new WebSocket(`${base.replace(/^http/, 'ws')}/v1/ws`, protocols)
ws.on('open', () => {
  ws.send(JSON.stringify({ type: 'hello', client: 'ws-demo' }))
  ws.send(JSON.stringify({ type: 'turn.start', message, ref: 'start' }))
})
ws.on('message', (data: Buffer) => {
  const frame = JSON.parse(data.toString('utf8')) as Record<string, any>
  if (frame.type !== 'event') {
    console.log(`<- ${frame.type}${frame.code === undefined ? '' : ` ${String(frame.code)}: ${String(frame.message)}`}`)
    return
  }
  const e = frame.event as Record<string, any>
  switch (e.kind) {
    case 'text.delta':
      process.stdout.write(String(e.text))
      return
    case 'reasoning.delta':
      process.stdout.write(`\x1b[2m${String(e.text)}\x1b[0m`)
      return
    case 'tool_call':
      console.log(`\n[${frame.seq}] tool_call ${e.name} ${JSON.stringify(e.arguments)}`)
      return
    case 'tool_result':
      console.log(`[${frame.seq}] tool_result ${e.name} ${e.status}: ${String(e.output).split('\n')[0]}`)
      return
    case 'approval.requested': {
      // `display` is what a person deciding should read: the exact arguments.
      const shown = (e.display as Array<{ name: string, value: string }>).map((d) => `${d.name}: ${d.value}`).join(', ')
      console.log(`\n[${frame.seq}] approval.requested ${e.name} (${shown}) -> answering ${answer}`)
      const reply: Record<string, unknown> = { type: 'approval.respond', request_id: e.request_id, decision: answer }
      if (answer === 'edit') reply.replacement = 'The operator replaced this result.'
      ws.send(JSON.stringify(reply))
      return
    }
    case 'turn.completed':
    case 'turn.cancelled':
    case 'turn.failed':
      console.log(`\n[${frame.seq}] ${e.kind}${e.code === undefined ? '' : ` ${String(e.code)}`}`)
      ws.close()
      return
    default:
      console.log(`[${frame.seq}] ${e.kind}${e.decision === undefined ? '' : ` ${String(e.decision)} by ${String(e.decided_by)}`}`)
  }
})
ws.on('close', () => process.exit(0))
ws.on('error', (err) => {
  console.error(`cannot reach ${base}: ${err.message}`)
  process.exit(1)
})
