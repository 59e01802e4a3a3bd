/**
 * The browsable API reference at /docs: Redoc (vendored into public/docs/, decision 0236)
 * rendering the gateway's own /openapi.yaml. Its files are served like the browser client's.
 */
import { createHash } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import type { UiAsset } from './assets.js'

export const API_DOCS_FILES: ReadonlyArray<{ path: string, file: string, type: string }> = [
  { path: '/docs', file: 'docs/index.html', type: 'text/html; charset=utf-8' },
  { path: '/docs/init.js', file: 'docs/init.js', type: 'text/javascript; charset=utf-8' },
  { path: '/docs/redoc.standalone.js', file: 'docs/redoc.standalone.js', type: 'text/javascript; charset=utf-8' }
]

/**
 * What Redoc needs and nothing more: its own scripts (no inline script), inline styles (its
 * styled-components inject <style> elements), the search index in a worker it makes from a blob:
 * URL, data: images and fonts of its theme, and fetching /openapi.yaml from this origin.
 */
export const API_DOCS_SECURITY_HEADERS: Readonly<Record<string, string>> = {
  'content-security-policy': "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; " +
    "font-src 'self' data:; connect-src 'self'; worker-src blob:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'x-frame-options': 'DENY',
  'cross-origin-opener-policy': 'same-origin',
  'cache-control': 'no-cache'
}

export function loadApiDocsAssets (publicDir: string): Map<string, UiAsset> {
  const assets = new Map<string, UiAsset>()
  for (const { path, file, type } of API_DOCS_FILES) {
    let body: Buffer
    try {
      body = readFileSync(join(publicDir, file))
    } catch {
      throw new Error(`the API reference page's file ${join(publicDir, file)} is missing; set ui.enabled = false to run without it`)
    }
    const etag = `"${createHash('sha256').update(body).digest('base64url').slice(0, 27)}"`
    assets.set(path, { body, type, etag })
  }
  return assets
}
