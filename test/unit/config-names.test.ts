import { test } from 'node:test'
import assert from 'node:assert/strict'
import { ConfigError, loadConfig } from '../../src/core/config.js'

test('a default_agent or agent provider named after an Object.prototype member is a configuration error', () => {
  assert.throws(
    () => loadConfig({ env: {}, overrides: { default_agent: 'toString' } }),
    (err: unknown) => err instanceof ConfigError && /default_agent "toString"/.test(err.message)
  )
  assert.throws(
    () => loadConfig({ env: {}, overrides: { agents: { default: { provider: 'constructor' } } } }),
    /agents\.default\.provider "constructor" is not defined/
  )
})
