import { test } from 'node:test'
import assert from 'node:assert/strict'
import { readdirSync, readFileSync } from 'node:fs'
import { dirname, join, relative, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..')

function sourceFiles (dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name)
    if (entry.isDirectory()) return sourceFiles(path)
    return entry.name.endsWith('.ts') ? [path] : []
  })
}

test('one module writes text/event-stream responses: keep-alive and the slow-consumer policy hold for every stream', () => {
  // Providers read upstream streams; they never answer one.
  const writers = [...sourceFiles(join(ROOT, 'src')), ...sourceFiles(join(ROOT, 'routes'))]
    .filter((file) => !file.includes('/src/providers/'))
    .filter((file) => /['"]content-type['"]\s*:\s*['"]text\/event-stream/i.test(readFileSync(file, 'utf8')))
    .map((file) => relative(ROOT, file))
  assert.deepEqual(writers, ['src/transport/sse-writer.ts'])
})
