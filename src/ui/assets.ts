/**
 * The browser client's static files (public/: the page, its stylesheet, the committed bundle),
 * read once at start with their content type and ETag, and the headers that lock the page down.
 */
import { createHash } from 'node:crypto'
import { existsSync, readFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

export interface UiAsset {
  body: Buffer
  type: string
  etag: string
}

/** URL path → file in public/ and its content type. */
export const UI_FILES: ReadonlyArray<{ path: string, file: string, type: string }> = [
  { path: '/', file: 'index.html', type: 'text/html; charset=utf-8' },
  { path: '/ui/app.js', file: 'app.js', type: 'text/javascript; charset=utf-8' },
  { path: '/ui/app.css', file: 'app.css', type: 'text/css; charset=utf-8' },
  { path: '/ui/icon.svg', file: 'icon.svg', type: 'image/svg+xml' }
]

/**
 * No inline script or style, nothing from another origin, no framing, no form posts: the page
 * only loads its own files and talks to its own gateway (connect-src 'self' covers ws: and wss:).
 */
export const UI_SECURITY_HEADERS: Readonly<Record<string, string>> = {
  'content-security-policy': "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'x-frame-options': 'DENY',
  'cross-origin-opener-policy': 'same-origin',
  'cache-control': 'no-cache'
}

/** public/ of this installation: found upwards from this module (src/ui when run from source, dist/src/ui when built). */
export function defaultPublicDir (): string {
  let dir = dirname(fileURLToPath(import.meta.url))
  for (let i = 0; i < 5; i++) {
    const candidate = join(dir, 'public')
    if (existsSync(join(candidate, 'index.html'))) return candidate
    dir = dirname(dir)
  }
  throw new Error('the browser client\'s files (public/index.html) are not installed; set ui.enabled = false to run without them')
}

export function loadUiAssets (dir: string): Map<string, UiAsset> {
  const assets = new Map<string, UiAsset>()
  for (const { path, file, type } of UI_FILES) {
    let body: Buffer
    try {
      body = readFileSync(join(dir, file))
    } catch {
      throw new Error(`the browser client file ${join(dir, file)} is missing: run \`npm run build:ui\`, or set ui.enabled = false`)
    }
    const etag = `"${createHash('sha256').update(body).digest('base64url').slice(0, 27)}"`
    assets.set(path, { body, type, etag })
  }
  return assets
}
