/**
 * GET /docs in real Chromium: Redoc, served from the gateway itself, renders the gateway's own
 * openapi.yaml under the page's Content-Security-Policy, with no request leaving the origin and
 * no console error (a CSP violation is one).
 */
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { chromium } from 'playwright-core'
import { CHROMIUM, CHROMIUM_ARGS, requireChromium } from '../helpers/chromium.js'
import { startGateway } from '../helpers/gateway.js'

test('the /docs page renders the gateway\'s openapi.yaml with Redoc from its own origin, within its CSP', async (t) => {
  requireChromium()
  const g = await startGateway()
  t.after(() => g.close())
  const browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS })
  t.after(() => browser.close())
  const page = await browser.newPage()
  const problems: string[] = []
  const foreign: string[] = []
  // Redoc's sidebar shows a "Redocly" logo from its CDN; the CSP refuses it (nothing leaves the
  // origin), Redoc then hides the image, and Chromium reports the refusal: that one is expected.
  const logoRefused = /^Loading the image 'https:\/\/cdn\.redoc\.ly\/redoc\/logo-mini\.svg' violates/
  page.on('console', (msg) => { if (msg.type() === 'error' && !logoRefused.test(msg.text())) problems.push(msg.text()) })
  page.on('pageerror', (err) => { problems.push(err.message) })
  // What reached another origin: a response, not an attempt the CSP refused.
  page.on('response', (response) => { if (!/^(blob|data):/.test(response.url()) && !response.url().startsWith(g.url)) foreign.push(response.url()) })

  const response = await page.goto(`${g.url}/docs`)
  assert.equal(response?.status(), 200)
  assert.match(response?.headers()['content-security-policy'] ?? '', /script-src 'self';/)
  // Redoc renders the document's title and one entry per operation.
  await page.locator('h1', { hasText: 'Tollgate' }).first().waitFor({ timeout: 30_000 })
  await page.getByText('/v1/turns', { exact: false }).first().waitFor({ timeout: 30_000 })
  assert.deepEqual(problems, [])
  assert.deepEqual(foreign, [])
})
