/** Debian's Chromium, driven by playwright-core: never a downloaded browser. Missing is a failure, not a skip. */
import assert from 'node:assert/strict'
import { existsSync } from 'node:fs'

export const CHROMIUM = '/usr/bin/chromium'
export const CHROMIUM_ARGS = [
  '--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-quic', '--no-first-run',
  '--disable-component-update', '--disable-sync'
]

export function requireChromium (): void {
  assert.ok(existsSync(CHROMIUM), `Debian chromium is not installed at ${CHROMIUM}: run \`apt-get install -y chromium\` (.ci/run does this)`)
}
