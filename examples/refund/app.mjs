// An application's own tool, in process: `refund` runs unasked up to 100 and waits for a
// person's approval above. Run it with an OpenAI-compatible model:
//   OPENAI_BASE_URL=https://api.openai.com/v1 OPENAI_API_KEY=sk-… node app.mjs
// then open the printed URL (the browser client answers approvals), or POST /v1/turns.
import { createGateway, tool } from 'tollgate'
import { z } from 'zod'

const refunds = []

const refund = tool({
  name: 'refund',
  description: 'Refund part or all of an order to the customer',
  parameters: z.object({
    order_id: z.string().min(1).describe('The order to refund'),
    amount: z.number().positive().describe('Amount in the order currency')
  }),
  // Small refunds are routine; larger ones wait for a person (audited like every approval).
  needsApproval: (args) => args.amount > 100,
  risk: 'high',
  async execute ({ order_id: orderId, amount }, ctx) {
    ctx.progress({ message: `refunding ${orderId}` })
    refunds.push({ orderId, amount, turn: ctx.turnId, tenant: ctx.tenant })
    return `refunded ${amount} on order ${orderId}`
  }
})

const baseUrl = process.env.OPENAI_BASE_URL
const gateway = createGateway({
  config: {
    log: { level: process.env.LOG_LEVEL ?? 'info' },
    providers: baseUrl === undefined
      ? {}
      : { main: { kind: 'openai', base_url: baseUrl, model: process.env.OPENAI_MODEL ?? 'gpt-4o-mini', api_key_env: 'OPENAI_API_KEY' } },
    agents: { default: { provider: baseUrl === undefined ? 'demo' : 'main', tools: [] } }
  },
  tools: [refund]
})

const url = await gateway.listen({ port: Number(process.env.PORT ?? 8787) })
process.stdout.write(`refund app listening on ${url}\n`)

for (const signal of ['SIGINT', 'SIGTERM']) {
  process.once(signal, () => { gateway.close().then(() => process.exit(0), () => process.exit(1)) })
}
