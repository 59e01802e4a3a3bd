/**
 * The browser page end to end in real headless Chromium (Debian's /usr/bin/chromium driven by
 * playwright-core) against the real gateway on port 0 with the fake provider. Chromium missing
 * is a failure, never a skip: .ci/run installs it.
 */
import { after, before, test } from 'node:test'
import assert from 'node:assert/strict'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { chromium, type BrowserContext, type Page } from 'playwright-core'
import type { EventEnvelope } from '../../schemas/events.js'
import { CHROMIUM, CHROMIUM_ARGS, listingRouteMissing, requireChromium } from '../helpers/chromium.js'
import type { TestGateway } from '../helpers/gateway.js'
import { startDropperGateway, type SocketDropper } from '../helpers/socket-drop.js'
import { bearer, jwtAuth, mintToken } from '../helpers/tokens.js'
import { eventually } from '../helpers/eventually.js'

const WAIT = { timeout: 20_000 }

let context: BrowserContext | null = null
let userDataDir = ''

before(async () => {
  requireChromium()
  userDataDir = await mkdtemp(join(tmpdir(), 'tollgate-chromium-'))
  context = await chromium.launchPersistentContext(userDataDir, { executablePath: CHROMIUM, headless: true, args: CHROMIUM_ARGS })
})

after(async () => {
  await context?.close()
  if (userDataDir !== '') await rm(userDataDir, { recursive: true, force: true })
})

interface Setup { g: TestGateway, page: Page, dropper: SocketDropper, problems: string[] }

async function setup (t: { after: (fn: () => Promise<void>) => void }, options: { auth?: Record<string, unknown> } = {}): Promise<Setup> {
  assert.ok(context !== null, 'chromium did not start')
  const { g, dropper } = await startDropperGateway(options.auth)
  const page = await context.newPage()
  // Script errors and CSP violations (reported as console errors) fail the test that caused them.
  const problems: string[] = []
  page.on('pageerror', (err) => { problems.push(`pageerror: ${err.message}`) })
  page.on('console', (msg) => { if (msg.type() === 'error' && !listingRouteMissing(msg)) problems.push(`console: ${msg.text()}`) })
  t.after(async () => {
    await page.close()
    await g.close()
  })
  await page.goto(`${g.url}/`)
  if (options.auth === undefined) await page.locator('#connection[data-state="open"]').waitFor(WAIT)
  return { g, page, dropper, problems }
}

async function startTurn (page: Page, message: string, options: { detach?: boolean } = {}): Promise<string> {
  if (options.detach === true) await page.check('#detach')
  await page.fill('#message', message)
  await page.click('#send')
  const turn = page.locator('.turn').first()
  await turn.waitFor(WAIT)
  return String(await turn.getAttribute('data-turn-id'))
}

/** What the page's event log shows for a turn: one `seq kind` line per rendered event. */
async function loggedEvents (page: Page, turnId: string): Promise<string[]> {
  return await page.locator(`#event-log li[data-turn-id="${turnId}"]`).evaluateAll((items) =>
    items.map((li) => `${li.getAttribute('data-seq') ?? ''} ${li.getAttribute('data-kind') ?? ''}`))
}

async function serverEvents (g: TestGateway, turnId: string): Promise<string[]> {
  const events = (await g.http('GET', `/v1/turns/${turnId}/events`)).body.events as EventEnvelope[]
  return events.map((e) => `${e.seq} ${e.event.kind}`)
}

test('in Chromium, approving a risky call on the page shows its result card and the final answer, escaped', async (t) => {
  const { g, page, problems } = await setup(t)
  const hostile = 'Finished <img src=x onerror="document.title=\'owned\'"> <b>bold</b>'
  g.provider.enqueue({ toolCalls: [{ id: 'a', name: 'risky', arguments: { label: 'from-browser' } }] }, { text: hostile })
  const turnId = await startTurn(page, 'please run risky')

  const card = page.locator('.card[data-tool="risky"]')
  await card.locator('.approval button[data-decision="yes"]').waitFor(WAIT)
  assert.match(String(await card.locator('.approval-question').textContent()), /Allow risky\?/)
  await card.locator('button[data-decision="yes"]').click()
  await page.locator('.card[data-tool="risky"][data-status="ok"]').waitFor(WAIT)
  assert.equal(await card.locator('.card-output').textContent(), 'done from-browser')

  await page.locator(`.turn[data-turn-id="${turnId}"][data-status="completed"]`).waitFor(WAIT)
  assert.equal(await page.locator('.final-text').textContent(), hostile, 'model text is shown as text')
  assert.equal(await page.locator('.turn img, .turn b').count(), 0, 'model text never becomes markup')
  assert.notEqual(await page.title(), 'owned')

  assert.deepEqual(await loggedEvents(page, turnId), await serverEvents(g, turnId))
  const turn = (await g.http('GET', `/v1/turns/${turnId}`)).body
  assert.deepEqual(turn.tool_calls.map((c: { status: string }) => c.status), ['ok'])
  assert.equal(turn.approvals[0].decision, 'yes')
  assert.match(turn.approvals[0].decided_by, /^ws:/)
  assert.deepEqual(problems, [])
})

test('in Chromium, the approval card shows the exact arguments: both deceptions reveal their touch, escapes stand apart', async (t) => {
  const { g, page, problems } = await setup(t)
  const kv = 'echo \'password="\'; touch PWN_KV; echo \'"\''
  const url = 'echo http://u:$(touch${IFS}PWN_URL)@example.com'
  const padded = `ls${' '.repeat(400)}; touch PWN_TAIL\u202E`
  g.provider.enqueue({ toolCalls: [{ id: 'a', name: 'risky', arguments: { label: kv, output: url, ms: 0, fail: false } }] }, { text: 'ok' })
  await startTurn(page, 'deceive me')
  const card = page.locator('.card[data-tool="risky"]')
  await card.locator('.approval button[data-decision="no"]').waitFor(WAIT)
  const shown = await card.locator('.card-args.exact dd').allTextContents()
  assert.deepEqual(await card.locator('.card-args.exact dt').allTextContents(), ['fail', 'label', 'ms', 'output'])
  assert.deepEqual(shown, ['false', kv, '0', url])
  await card.locator('button[data-decision="no"]').click()
  await page.locator('.card[data-tool="risky"][data-status="denied"]').waitFor(WAIT)

  g.provider.enqueue({ toolCalls: [{ id: 'b', name: 'risky', arguments: { label: padded } }] }, { text: 'ok' })
  await page.fill('#message', 'pad it')
  await page.click('#send')
  const second = page.locator('.card[data-tool="risky"][data-status="awaiting-approval"]')
  await second.waitFor(WAIT)
  const value = second.locator('.card-args.exact dd pre')
  assert.equal(await value.textContent(), `ls${' '.repeat(400)}; touch PWN_TAIL‹U+202E›`)
  assert.deepEqual(await value.locator('.escape').allTextContents(), ['‹U+202E›'])
  const box = await value.evaluate((node) => ({ scrollWidth: node.scrollWidth, clientWidth: node.clientWidth }))
  assert.ok(box.scrollWidth <= box.clientWidth, 'the long value wraps inside its box instead of running off to the side')
  assert.ok(await second.locator('.card-args.exact dd pre', { hasText: 'touch PWN_TAIL' }).isVisible())
  assert.deepEqual(problems, [])
})

test('in Chromium, a socket killed mid-turn is resumed after the last seq and the page shows every event exactly once', async (t) => {
  const { g, page, dropper } = await setup(t)
  g.provider.enqueue(
    { toolCalls: [{ id: 'a', name: 'drop_sockets', arguments: {} }] },
    { toolCalls: [{ id: 'b', name: 'probe', arguments: { label: 'after-the-drop' } }] },
    { text: 'finished after the drop', chunkDelayMs: 5 }
  )
  const turnId = await startTurn(page, 'survive a drop', { detach: true })
  await page.locator(`.turn[data-turn-id="${turnId}"][data-status="completed"]`).waitFor(WAIT)
  assert.equal(dropper.dropped(), 1, 'the page\'s socket was cut once')

  const server = await serverEvents(g, turnId)
  assert.deepEqual(await loggedEvents(page, turnId), server, 'every event once, in seq order')
  const dropSeq = server.find((line) => line.endsWith(' tool_call'))?.split(' ')[0]
  const resumed = await page.locator('#notices li.notice-resume').allTextContents()
  assert.equal(resumed.length, 1)
  assert.match(resumed[0] ?? '', new RegExp(`resumed ${turnId} after seq ${dropSeq ?? '?'} \\(gateway at seq \\d+\\)`))
  assert.equal(await page.locator('.card[data-tool="drop_sockets"]').getAttribute('data-status'), 'ok')
  assert.equal(await page.locator('.card[data-tool="probe"] .card-output').textContent(), 'done after-the-drop')
  assert.equal(await page.locator('.final-text').textContent(), 'finished after the drop')
  assert.equal(await page.locator('#connection').getAttribute('data-state'), 'open')
})

test('in Chromium, the Cancel button cancels a running turn and its running tool is interrupted', async (t) => {
  const { g, page, problems } = await setup(t)
  g.provider.enqueue({ toolCalls: [{ id: 'a', name: 'probe', arguments: { label: 'slow', ms: 30_000 } }] })
  const turnId = await startTurn(page, 'run long')
  await page.locator('.card[data-tool="probe"][data-status="running"]').waitFor(WAIT)
  await page.click(`.turn[data-turn-id="${turnId}"] button.cancel`)
  await page.locator(`.turn[data-turn-id="${turnId}"][data-status="cancelled"]`).waitFor(WAIT)
  assert.equal(await page.locator('.card[data-tool="probe"]').getAttribute('data-status'), 'interrupted')
  assert.deepEqual(await loggedEvents(page, turnId), await serverEvents(g, turnId))
  assert.deepEqual(problems, [])
})

test('in Chromium, Edit replaces the result of a call that then never runs', async (t) => {
  const { g, page } = await setup(t)
  g.provider.enqueue({ toolCalls: [{ id: 'a', name: 'risky', arguments: { label: 'x' } }] }, { text: 'ok' })
  const turnId = await startTurn(page, 'edit it')
  const card = page.locator('.card[data-tool="risky"]')
  await card.locator('button[data-decision="edit"]').click(WAIT)
  await card.locator('textarea.replacement').fill('operator says: skip it')
  await card.locator('button.submit-edit').click()
  await page.locator('.card[data-tool="risky"][data-status="replaced"]').waitFor(WAIT)
  assert.equal(await card.locator('.card-output').textContent(), 'operator says: skip it')
  await page.locator(`.turn[data-turn-id="${turnId}"][data-status="completed"]`).waitFor(WAIT)
  assert.equal((await g.http('GET', `/v1/turns/${turnId}`)).body.approvals[0].decision, 'edit')
})

test('in Chromium, a token typed on the page is offered as the bearer.<token> WebSocket subprotocol', async (t) => {
  const { page } = await setup(t)
  const cdp = await page.context().newCDPSession(page)
  await cdp.send('Network.enable')
  const offered: string[] = []
  cdp.on('Network.webSocketWillSendHandshakeRequest', (e) => {
    const headers = e.request.headers as Record<string, string>
    offered.push(headers['Sec-WebSocket-Protocol'] ?? headers['sec-websocket-protocol'] ?? '')
  })
  await page.click('.settings summary')
  await page.fill('#token', 'eyJhbGciOiJIUzI1NiJ9.e30.c2lnbmF0dXJl')
  await page.click('#token-form button[type="submit"]')
  await page.locator('#notices li', { hasText: 'token set; reconnecting' }).waitFor(WAIT)
  await page.locator('#connection[data-state="open"]').waitFor(WAIT)
  await eventually(() => offered.length > 0, { what: 'the page to offer a subprotocol' })
  assert.deepEqual(offered, ['tollgate.v1, bearer.eyJhbGciOiJIUzI1NiJ9.e30.c2lnbmF0dXJl'])

  await page.fill('#token', 'not a token')
  await page.click('#token-form button[type="submit"]')
  await page.locator('#notices li.notice-error', { hasText: 'INVALID_TOKEN' }).waitFor(WAIT)
})

test('in Chromium with auth.mode jwt, the page connects once a token is entered and runs turns as that principal', async (t) => {
  const { g, page } = await setup(t, { auth: jwtAuth() })
  // Without a token every upgrade is refused; the page keeps retrying.
  await page.locator('#connection[data-state="reconnecting"]').waitFor(WAIT)
  const token = await mintToken({ sub: 'browser-user' })
  await page.click('.settings summary')
  await page.fill('#token', token)
  await page.click('#token-form button[type="submit"]')
  await page.locator('#connection[data-state="open"]').waitFor(WAIT)
  g.provider.enqueue({ text: 'hello, browser user' })
  const turnId = await startTurn(page, 'who am I')
  await page.locator(`.turn[data-turn-id="${turnId}"][data-status="completed"]`).waitFor(WAIT)
  assert.equal((await g.http('GET', `/v1/turns/${turnId}`, undefined, bearer(token))).status, 200, 'the turn belongs to the token\'s principal')
  assert.equal((await g.http('GET', `/v1/turns/${turnId}`, undefined, bearer(await mintToken({ sub: 'someone-else' })))).status, 404)
  assert.equal((await g.http('GET', `/v1/turns/${turnId}`)).status, 401)
})
