/**
 * Steering from the browser page in real headless Chromium: while the turn the form started
 * runs, the form sends its message to that turn, which shows it and the model reads it next.
 */
import { after, before, test } from 'node:test'
import assert from 'node:assert/strict'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { chromium, type BrowserContext } from 'playwright-core'
import { CHROMIUM, CHROMIUM_ARGS, listingRouteMissing, requireChromium } from '../helpers/chromium.js'
import { startGateway } from '../helpers/gateway.js'
import { gate } from '../helpers/turns.js'
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

test('in Chromium, a message typed while the page\'s turn runs steers it: shown in the turn, read by the model next, no second turn', async (t) => {
  assert.ok(context !== null, 'chromium did not start')
  const g = await startGateway()
  const page = await context.newPage()
  const problems: string[] = []
  page.on('pageerror', (err) => { problems.push(`pageerror: ${err.message}`) })
  page.on('console', (msg) => { if (msg.type() === 'error' && !listingRouteMissing(msg)) problems.push(`console: ${msg.text()}`) })
  t.after(async () => {
    await page.close()
    await g.close()
  })
  const held = gate()
  g.provider.enqueue({ text: 'A long story.', gate: held.promise }, { text: 'Short.' })
  await page.goto(`${g.url}/`)
  await page.locator('#connection[data-state="open"]').waitFor(WAIT)
  await page.fill('#message', 'tell me a story')
  await page.click('#send')
  await page.locator('#turn-form[data-mode="steer"]').waitFor(WAIT)
  assert.equal(await page.textContent('#send'), 'Send to the running turn')
  await eventually(() => g.provider.open() === 1, { what: 'the model call' })
  await page.fill('#message', 'keep it short')
  await page.click('#send')
  await page.locator('.turn .turn-steer', { hasText: 'You: keep it short' }).waitFor(WAIT)
  held.open()
  await page.locator('.turn[data-status="completed"]').waitFor(WAIT)
  await page.locator('#turn-form[data-mode="start"]').waitFor(WAIT)
  assert.equal(await page.textContent('#send'), 'Start turn')
  assert.equal(await page.locator('.turn').count(), 1)
  assert.deepEqual(g.provider.requests[1]?.body.messages.slice(-3).map((m) => m.content), ['tell me a story', 'A long story.', 'keep it short'])
  assert.deepEqual(problems, [])
})
