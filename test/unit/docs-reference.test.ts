/**
 * The generated references (docs/reference/configuration.md, docs/reference/errors.md) match what
 * `npm run docs:reference` writes from the schema and the error catalogue, and name every key and code.
 */
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { readFile, stat } from 'node:fs/promises'
import {
  CONFIGURATION_PATH, ERRORS_PATH, configKeys, renderConfigurationReference, renderErrorsReference
} from '../../scripts/docs-reference.js'
import { ERRORS, TURN_FAILURE_CODES } from '../../src/core/errors.js'

test('docs/reference/configuration.md is what npm run docs:reference writes from schemas/config.ts', async () => {
  assert.equal(await readFile(CONFIGURATION_PATH, 'utf8'), renderConfigurationReference(), 'stale: run npm run docs:reference')
})

test('docs/reference/errors.md is what npm run docs:reference writes from the error catalogue', async () => {
  assert.equal(await readFile(ERRORS_PATH, 'utf8'), renderErrorsReference(), 'stale: run npm run docs:reference')
})

test('every configuration key that is not a table has a description in the schema', () => {
  const undocumented = configKeys().filter((k) => k.type !== 'table' && (k.description ?? '') === '').map((k) => k.path)
  assert.deepEqual(undocumented, [])
})

test('every configuration key path appears in the configuration reference', async () => {
  const text = await readFile(CONFIGURATION_PATH, 'utf8')
  const keys = configKeys().filter((k) => k.type !== 'table')
  assert.ok(keys.length > 150, `the walk found only ${keys.length} keys`)
  assert.deepEqual(keys.filter((k) => !text.includes(`| \`${k.path}\` |`)).map((k) => k.path), [])
  for (const nested of ['providers.<name>.base_url', 'agents.<name>.tools', 'runtime_profiles.<name>.loop_detection.window_size',
    'risk_profiles.<name>.level', 'mcp.servers.<server>.transport', 'receipts.keys[].secret_env', 'tools.shell.cgroups.tenant.cpus']) {
    assert.ok(text.includes(`| \`${nested}\` |`), nested)
  }
})

test('every catalogue code and every turn failure code has a row in the error reference', async () => {
  const text = await readFile(ERRORS_PATH, 'utf8')
  const codes = [...Object.keys(ERRORS), ...TURN_FAILURE_CODES]
  assert.deepEqual(codes.filter((code) => !text.includes(`| \`${code}\` |`)), [])
})

test('the README stays an entry point: at most 16 KB, starting with the set-up commands, linking both references', async () => {
  const readme = new URL('../../README.md', import.meta.url)
  assert.ok((await stat(readme)).size <= 16 * 1024)
  const text = await readFile(readme, 'utf8')
  assert.ok(text.startsWith('# Tollgate\n\n```sh\nnpm install && npm start '), 'the first lines are the two set-up commands')
  assert.ok(text.includes('](docs/reference/configuration.md)'))
  assert.ok(text.includes('](docs/reference/errors.md)'))
})
