/**
 * The browser page on a 320 px phone in real Chromium, light and dark: one prompt per approval
 * request (the inbox points to the turn's card), every button at least 44×44 px, no sideways
 * scrolling even with a long URL in a message, tool cards in the order their calls ran, an outcome
 * that says what happened, and AA contrast checked by axe-core in both colour schemes.
 */
import { after, before, test } from 'node:test'
import assert from 'node:assert/strict'
import { createRequire } from 'node:module'
import { chromium, type Browser, type Page } from 'playwright-core'
import { CHROMIUM, CHROMIUM_ARGS, listingRouteMissing, requireChromium } from '../helpers/chromium.js'
import { startDropperGateway } from '../helpers/socket-drop.js'

const WAIT = { timeout: 20_000 }
const AXE = createRequire(import.meta.url).resolve('axe-core/axe.min.js')
const LONG_URL = `https://example.com/${'very-long-path-segment/'.repeat(12)}?q=${'x'.repeat(80)}`

let browser: Browser | null = null
before(async () => {
  requireChromium()
  browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS })
})
after(async () => { await browser?.close() })

interface AxeViolation { id: string, nodes: Array<{ target: string[], failureSummary: string }> }

/** axe-core's colour-contrast and target-size findings on the page as it is now. */
async function axeFindings (page: Page): Promise<string[]> {
  if (await page.evaluate(() => !('axe' in globalThis))) await page.addScriptTag({ path: AXE })
  const violations = await page.evaluate(async () => {
    const axe = (globalThis as unknown as { axe: { run: (o: unknown) => Promise<{ violations: unknown[] }> } }).axe
    return (await axe.run({ runOnly: { type: 'rule', values: ['color-contrast', 'target-size'] } })).violations
  }) as AxeViolation[]
  return violations.flatMap((v) => v.nodes.map((n) => `${v.id} ${n.target.join(' ')}: ${n.failureSummary}`))
}

/** Visible buttons smaller than 44×44 px, by their text. */
async function smallButtons (page: Page): Promise<string[]> {
  return await page.$$eval('button', (buttons) => buttons
    .filter((b) => b.getClientRects().length > 0)
    .filter((b) => { const r = b.getBoundingClientRect(); return r.width < 44 || r.height < 44 })
    .map((b) => `${b.textContent ?? ''} ${Math.round(b.getBoundingClientRect().width)}×${Math.round(b.getBoundingClientRect().height)}`))
}

async function overflow (page: Page): Promise<number> {
  return await page.evaluate(() => {
    type Root = { documentElement: { scrollWidth: number, clientWidth: number } }
    const root = (globalThis as unknown as { document: Root }).document.documentElement
    return root.scrollWidth - root.clientWidth
  })
}

for (const colorScheme of ['light', 'dark'] as const) {
  test(`in Chromium at 320 px (${colorScheme}): one prompt per request, 44 px targets, no overflow, cards in run order, the outcome in words, AA contrast`, async (t) => {
    assert.ok(browser !== null)
    const { g } = await startDropperGateway()
    // bypassCSP only so the test can inject axe-core; the page itself runs under its own CSP.
    const context = await browser.newContext({ viewport: { width: 320, height: 720 }, colorScheme, bypassCSP: true })
    t.after(async () => {
      await context.close()
      await g.close()
    })
    const page = await context.newPage()
    const problems: string[] = []
    page.on('pageerror', (err) => { problems.push(err.message) })
    page.on('console', (msg) => { if (msg.type() === 'error' && !listingRouteMissing(msg)) problems.push(msg.text()) })
    await page.goto(`${g.url}/`)
    await page.locator('#connection[data-state="open"]').waitFor(WAIT)

    // probe runs unasked, risky asks: risky's card appears first (its request), but probe runs first.
    g.provider.enqueue({
      toolCalls: [{ id: 'a', name: 'probe', arguments: { label: 'first' } }, { id: 'b', name: 'risky', arguments: { label: LONG_URL } }]
    }, { text: 'Both ran.' })
    await page.fill('#message', `fetch ${LONG_URL}`)
    await page.click('#send')
    const prompt = page.locator('#turns .approval')
    await prompt.waitFor(WAIT)
    const requestId = String(await prompt.getAttribute('data-request-id'))
    await page.locator(`#inbox-list .inbox-item.linked[data-request-id="${requestId}"]`).waitFor(WAIT)
    assert.equal(await page.locator(`.approval[data-request-id="${requestId}"]`).count(), 1, 'one prompt for the request on the whole page')
    // Announced (after a short delay) with focus on the turn card's prompt, the only one.
    await page.locator(`#turns .approval[data-request-id="${requestId}"]:focus`).waitFor(WAIT)
    // "Why" in plain words; the policy's own sentence is folded beneath.
    const why = page.locator(`.approval[data-request-id="${requestId}"] [data-fact="reason"]`)
    assert.match(String(await why.textContent()), /^This tool needs a person's yes before it runs\.Policy detail'risky' is not auto-approved/)
    assert.equal(await why.locator('details').getAttribute('open'), null)
    assert.deepEqual(await smallButtons(page), [])
    assert.equal(await overflow(page), 0, 'no horizontal scrolling at 320 px')
    assert.deepEqual(await axeFindings(page), [])

    await page.click(`.approval[data-request-id="${requestId}"] button[data-decision="yes"]`)
    const turn = page.locator('.turn').first()
    await page.locator('.turn[data-status="completed"]').waitFor(WAIT)
    assert.deepEqual(await turn.locator('.card').evaluateAll((cards) => cards.map((c) => c.getAttribute('data-tool'))), ['probe', 'risky'])
    assert.equal(await turn.locator('.turn-status').textContent(), 'completed')
    assert.equal(await turn.locator('.approval-decision').textContent(), 'Approved by local/local over a live connection (this page or a terminal)')

    // A turn whose call was denied completed, but says so, and not in the success colour.
    g.provider.enqueue({ toolCalls: [{ id: 'c', name: 'risky', arguments: { label: 'no thanks' } }] }, { text: 'Skipped.' })
    await page.fill('#message', 'try risky again')
    await page.click('#send')
    const second = page.locator('.turn').first()
    await second.locator('.approval button[data-decision="no"]').click(WAIT)
    await page.locator('.turn[data-outcome="partial"]').waitFor(WAIT)
    assert.equal(await second.locator('.turn-status').textContent(), 'completed — 1 call denied')
    assert.deepEqual(await smallButtons(page), [])
    assert.equal(await overflow(page), 0)
    assert.deepEqual(await axeFindings(page), [])
    assert.deepEqual(problems, [])
  })
}
