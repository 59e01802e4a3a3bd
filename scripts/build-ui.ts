/** `npm run build:ui`: writes public/app.js when the bundled page differs from it. */
import { readFile, rename, writeFile } from 'node:fs/promises'
import { BUNDLE_PATH, bundleUi } from './ui-bundle.js'

const code = await bundleUi()
const current = await readFile(BUNDLE_PATH, 'utf8').catch(() => null)
if (current === code) {
  console.log('public/app.js is up to date')
} else {
  // Atomic replace: a gateway serving the page never reads a half-written bundle.
  const tmp = `${BUNDLE_PATH}.${process.pid}.tmp`
  await writeFile(tmp, code)
  await rename(tmp, BUNDLE_PATH)
  console.log(`wrote public/app.js (${code.length} bytes)`)
}
