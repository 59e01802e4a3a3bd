import { test } from 'node:test'
import assert from 'node:assert/strict'
import { readFile } from 'node:fs/promises'
import { startGateway, type TestGateway } from '../helpers/gateway.js'

async function setup (t: { after: (fn: () => Promise<void>) => void }, overrides: unknown = {}): Promise<TestGateway> {
  const g = await startGateway({ overrides })
  t.after(async () => { await g.close() })
  return g
}

test('GET / serves the page with a strict Content-Security-Policy and without inline script or style', async (t) => {
  const g = await setup(t)
  const res = await fetch(`${g.url}/`)
  assert.equal(res.status, 200)
  assert.equal(res.headers.get('content-type'), 'text/html; charset=utf-8')
  const csp = String(res.headers.get('content-security-policy'))
  assert.match(csp, /default-src 'none'/)
  assert.match(csp, /script-src 'self'(;|$)/)
  assert.match(csp, /frame-ancestors 'none'/)
  assert.doesNotMatch(csp, /unsafe-inline|unsafe-eval/)
  assert.equal(res.headers.get('x-content-type-options'), 'nosniff')
  const html = await res.text()
  assert.equal(html, await readFile('public/index.html', 'utf8'))
  for (const tag of html.match(/<script\b[^>]*>/g) ?? []) assert.match(tag, /\ssrc="\/ui\/app\.js"/, 'every script is the external bundle')
  assert.doesNotMatch(html, /<style\b|\sstyle=|\son[a-z]+=/i, 'no inline style or event handler attribute')
})

test('the bundle, stylesheet and icon are served with their content types and revalidate with ETag', async (t) => {
  const g = await setup(t)
  for (const [path, type, file] of [['/ui/app.js', 'text/javascript; charset=utf-8', 'public/app.js'], ['/ui/app.css', 'text/css; charset=utf-8', 'public/app.css'], ['/ui/icon.svg', 'image/svg+xml', 'public/icon.svg']]) {
    const res = await fetch(`${g.url}${path}`)
    assert.equal(res.status, 200, path)
    assert.equal(res.headers.get('content-type'), type, path)
    assert.equal(await res.text(), await readFile(file as string, 'utf8'), path)
    const etag = String(res.headers.get('etag'))
    const again = await fetch(`${g.url}${path}`, { headers: { 'if-none-match': etag } })
    assert.equal(again.status, 304, path)
  }
})

test('with ui.enabled = false the gateway serves no page', async (t) => {
  const g = await setup(t, { ui: { enabled: false } })
  const res = await g.http('GET', '/')
  assert.deepEqual([res.status, res.body.code], [404, 'NOT_FOUND'])
})
