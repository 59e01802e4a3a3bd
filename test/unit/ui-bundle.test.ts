import { test } from 'node:test'
import assert from 'node:assert/strict'
import { readFile } from 'node:fs/promises'
import { BUNDLE_PATH, bundleUi } from '../../scripts/ui-bundle.js'

test('the committed public/app.js is exactly a fresh esbuild bundle of client/ui', async () => {
  const fresh = await bundleUi()
  assert.equal(await readFile(BUNDLE_PATH, 'utf8'), fresh, 'public/app.js is stale: run `npm run build:ui`')
})

test('the browser bundle carries no Node-only module and no HTML-injecting DOM call', async () => {
  const code = await bundleUi()
  assert.doesNotMatch(code, /from "node:|require\(/)
  assert.doesNotMatch(code, /\.innerHTML|\.outerHTML|insertAdjacentHTML|document\.write/)
})
