/**
 * Session ids — and the AI SDK chat ids and AG-UI thread ids that are session ids — name a
 * session within the caller's tenant: two tenants using one id have two sessions, and neither
 * blocks, sees or reveals the other's. On SQLite with the in-process bus, and on PostgreSQL with
 * the Redis bus (whose session channels must not cross tenants either).
 */
import { test, type TestContext } from 'node:test'
import assert from 'node:assert/strict'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { HttpAgent } from '@ag-ui/client'
import { DefaultChatTransport, readUIMessageStream, type UIMessage } from 'ai'
import type { RecordedRequest, ScriptedReply } from '../helpers/fake-provider.js'
import { startGateway, type TestGateway, type TestSocket } from '../helpers/gateway.js'
import { deferrer, scratchPrefix, scratchSchema, type Defer } from '../helpers/services.js'
import { bearer, jwtAuth, mintToken } from '../helpers/tokens.js'
import { gate } from '../helpers/turns.js'
import { eventually } from '../helpers/eventually.js'

type Backend = 'sqlite' | 'postgres'

async function backendOverrides (backend: Backend, defer: Defer): Promise<Record<string, unknown>> {
  if (backend === 'postgres') {
    return {
      store: { kind: 'postgres', postgres: { url: 'postgres://postgres@127.0.0.1:5432/test', schema: scratchSchema(defer) } },
      bus: { kind: 'redis', redis: { url: 'redis://127.0.0.1:6379', key_prefix: scratchPrefix(defer) } }
    }
  }
  const dir = await mkdtemp(join(tmpdir(), 'tollgate-tenant-ids-'))
  defer(async () => { await rm(dir, { recursive: true, force: true }) })
  return { store: { kind: 'sqlite', sqlite: { path: join(dir, 'tollgate.db') } } }
}

interface Tenants {
  g: TestGateway
  acme: string
  globex: string
}

/** A JWT gateway on `backend`, and one principal of each tenant with the same `sub`. */
async function start (t: TestContext, backend: Backend): Promise<Tenants> {
  const defer = deferrer(t)
  const g = await startGateway({ overrides: { ...jwtAuth(), ...await backendOverrides(backend, defer) } })
  defer(async () => { await g.close() })
  return { g, acme: await mintToken({ tenant: 'acme', sub: 'alice' }), globex: await mintToken({ tenant: 'globex', sub: 'alice' }) }
}

function lastUserText (request: RecordedRequest): string {
  return request.body.messages.filter((m) => m.role === 'user').at(-1)?.content ?? ''
}

/** Every reply names the message it answers, so concurrent turns of two tenants can share the provider. */
function echo (hold: Record<string, Promise<void>> = {}): (request: RecordedRequest) => ScriptedReply {
  return (request) => {
    const text = lastUserText(request)
    const held = hold[text]
    return { text: `re: ${text}`, ...(held === undefined ? {} : { gate: held }) }
  }
}

/** The user messages the model was sent with `last` as the newest. */
function historyBehind (g: TestGateway, last: string): string[] {
  const request = g.provider.requests.find((r) => lastUserText(r) === last)
  assert.ok(request !== undefined, `no model request for ${last}`)
  return request.body.messages.filter((m) => m.role === 'user').map((m) => m.content ?? '')
}

async function userHistory (g: TestGateway, token: string, sessionId: string): Promise<string[]> {
  const res = await g.http('GET', `/v1/sessions/${sessionId}`, undefined, bearer(token))
  assert.equal(res.status, 200, JSON.stringify(res.body))
  return (res.body.history as Array<{ role: string, content: string }>).filter((m) => m.role === 'user').map((m) => m.content)
}

async function sessionSocket (g: TestGateway, token: string, sessionId: string): Promise<TestSocket> {
  const ws = await g.socket({ protocols: ['tollgate.v1', `bearer.${token}`] })
  const subscribed = await ws.request({ type: 'subscribe', session_id: sessionId })
  assert.equal(subscribed.type, 'subscribed', JSON.stringify(subscribed))
  return ws
}

function eventTurns (ws: TestSocket): string[] {
  return [...new Set(ws.frames.filter((f) => f.type === 'event').map((f) => f.turn_id as string))]
}

for (const backend of ['sqlite', 'postgres'] as const) {
  test(`${backend}: two tenants use one session id at once: both turns run, and each history, listing and session subscription is its own`, async (t) => {
    const { g, acme, globex } = await start(t, backend)
    const held = gate()
    for (let i = 0; i < 4; i++) g.provider.enqueue(echo({ 'acme two': held.promise }))
    const wait = async (token: string, message: string): Promise<{ status: number, body: any }> =>
      await g.http('POST', '/v1/turns?wait=true', { session_id: 'chat-1', message }, bearer(token))

    const acmeOne = await wait(acme, 'acme one')
    const globexOne = await wait(globex, 'globex one')
    assert.deepEqual([acmeOne.status, acmeOne.body.final_text], [200, 're: acme one'])
    assert.deepEqual([globexOne.status, globexOne.body.final_text], [200, 're: globex one'], 'the id acme uses is no obstacle to globex')

    const acmeWs = await sessionSocket(g, acme, 'chat-1')
    const globexWs = await sessionSocket(g, globex, 'chat-1')
    // acme's second turn stays running in its chat-1 while globex runs one in its own.
    const acmeTwo = await g.http('POST', '/v1/turns', { session_id: 'chat-1', message: 'acme two' }, bearer(acme))
    assert.equal(acmeTwo.status, 202)
    await eventually(() => g.provider.requests.some((r) => lastUserText(r) === 'acme two'), { what: 'acme\'s second model call' })
    const globexTwo = await wait(globex, 'globex two')
    assert.deepEqual([globexTwo.status, globexTwo.body.status], [200, 'completed'], 'acme\'s running turn does not make globex\'s session busy')
    held.open()
    await acmeWs.waitForTerminal(acmeTwo.body.turn_id as string)

    assert.deepEqual(eventTurns(acmeWs), [acmeTwo.body.turn_id])
    assert.deepEqual(eventTurns(globexWs), [globexTwo.body.turn_id])
    assert.deepEqual(await userHistory(g, acme, 'chat-1'), ['acme one', 'acme two'])
    assert.deepEqual(await userHistory(g, globex, 'chat-1'), ['globex one', 'globex two'])
    assert.deepEqual(historyBehind(g, 'globex two'), ['globex one', 'globex two'])
    assert.deepEqual(historyBehind(g, 'acme two'), ['acme one', 'acme two'])
    const own: Array<[string, string[]]> = [
      [acme, [acmeTwo.body.turn_id, acmeOne.body.turn_id]],
      [globex, [globexTwo.body.turn_id, globexOne.body.turn_id]]
    ]
    for (const [token, turns] of own) {
      const sessions = await g.http('GET', '/v1/sessions', undefined, bearer(token))
      assert.deepEqual(sessions.body.items.map((s: { session_id: string, active_turn_id: string | null }) => [s.session_id, s.active_turn_id]), [['chat-1', null]])
      const listed = await g.http('GET', '/v1/turns?session_id=chat-1', undefined, bearer(token))
      assert.deepEqual(listed.body.items.map((x: { turn_id: string }) => x.turn_id), turns)
    }
  })

  test(`${backend}: two tenants use one AI SDK chat id: each chat goes on from its own history`, async (t) => {
    const { g, acme, globex } = await start(t, backend)
    for (let i = 0; i < 4; i++) g.provider.enqueue(echo())
    const say = async (token: string, text: string): Promise<string> => {
      const chat = new DefaultChatTransport<UIMessage>({ api: `${g.url}/v1/ai-sdk/chat`, headers: bearer(token) })
      const message: UIMessage = { id: `u-${text}`, role: 'user', parts: [{ type: 'text', text }] }
      const stream = await chat.sendMessages({ chatId: 'chat-1', messages: [message], trigger: 'submit-message', messageId: undefined, abortSignal: undefined })
      let last: UIMessage | undefined
      for await (const m of readUIMessageStream({ stream })) last = m
      return (last?.parts ?? []).flatMap((p) => p.type === 'text' ? [p.text] : []).join('')
    }
    assert.equal(await say(acme, 'acme one'), 're: acme one')
    assert.equal(await say(globex, 'globex one'), 're: globex one')
    assert.equal(await say(acme, 'acme two'), 're: acme two')
    assert.equal(await say(globex, 'globex two'), 're: globex two')
    assert.deepEqual(historyBehind(g, 'acme two'), ['acme one', 'acme two'])
    assert.deepEqual(historyBehind(g, 'globex two'), ['globex one', 'globex two'])
    assert.deepEqual(await userHistory(g, acme, 'chat-1'), ['acme one', 'acme two'])
    assert.deepEqual(await userHistory(g, globex, 'chat-1'), ['globex one', 'globex two'])
  })

  test(`${backend}: two tenants use one AG-UI thread id and run id: each thread goes on from its own history`, async (t) => {
    const { g, acme, globex } = await start(t, backend)
    for (let i = 0; i < 4; i++) g.provider.enqueue(echo())
    const run = async (token: string, text: string, runId: string): Promise<unknown> => {
      const agent = new HttpAgent({
        url: `${g.url}/v1/ag-ui`, threadId: 'thread-1', headers: bearer(token), initialMessages: [{ id: `u-${text}`, role: 'user', content: text }]
      })
      return (await agent.runAgent({ runId })).result
    }
    // The run id is each turn's idempotency key: the same one in two tenants starts two turns.
    assert.equal(await run(acme, 'acme one', 'run-1'), 're: acme one')
    assert.equal(await run(globex, 'globex one', 'run-1'), 're: globex one')
    assert.equal(await run(acme, 'acme two', 'run-2'), 're: acme two')
    assert.equal(await run(globex, 'globex two', 'run-2'), 're: globex two')
    assert.deepEqual(historyBehind(g, 'acme two'), ['acme one', 'acme two'])
    assert.deepEqual(historyBehind(g, 'globex two'), ['globex one', 'globex two'])
    assert.deepEqual(await userHistory(g, acme, 'thread-1'), ['acme one', 'acme two'])
    assert.deepEqual(await userHistory(g, globex, 'thread-1'), ['globex one', 'globex two'])
  })
}
