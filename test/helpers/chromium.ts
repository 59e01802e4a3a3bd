/** Debian's Chromium, driven by playwright-core: never a downloaded browser. Missing is a failure, not a skip. */
import assert from 'node:assert/strict'
import { existsSync } from 'node:fs'
import type { ConsoleMessage } from 'playwright-core'

export const CHROMIUM = '/usr/bin/chromium'
export const CHROMIUM_ARGS = [
  '--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-quic', '--no-first-run',
  '--disable-component-update', '--disable-sync'
]

export function requireChromium (): void {
  assert.ok(existsSync(CHROMIUM), `Debian chromium is not installed at ${CHROMIUM}: run \`apt-get install -y chromium\` (.ci/run does this)`)
}

/**
 * Chromium logs every 404 a page fetched as a console error. The page's lists (`GET /v1/sessions`,
 * `GET /v1/turns`, `GET /v1/approvals`) may be missing on a gateway built without them; the page
 * says so in its panels, so those 404s are not a test failure. Any other console error still is.
 */
export function listingRouteMissing (msg: ConsoleMessage): boolean {
  const path = URL.canParse(msg.location().url) ? new URL(msg.location().url).pathname : ''
  return /status of 404/.test(msg.text()) && ['/v1/sessions', '/v1/turns', '/v1/approvals'].includes(path)
}
