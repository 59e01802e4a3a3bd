import { test } from 'node:test'
import assert from 'node:assert/strict'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { ConfigError, deprecatedKeys, loadConfig } from '../../src/core/config.js'
import { startGateway } from '../helpers/gateway.js'
import { captureLogs } from '../helpers/log-capture.js'

test('the old _chars names of the byte limits still set the new _bytes keys and are reported as deprecated', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'tollgate-renames-'))
  t.after(async () => { await rm(dir, { recursive: true, force: true }) })
  const file = join(dir, 'tollgate.toml')
  await writeFile(file, '[turns]\nmax_event_output_chars = 4096\n\n[runtime_profiles.default]\nmax_tool_result_chars = 1234\n')
  const config = loadConfig({ env: {}, file })
  assert.equal(config.turns.max_event_output_bytes, 4096)
  assert.equal(config.runtime_profiles.default?.max_tool_result_bytes, 1234)
  assert.equal(Object.hasOwn(config.turns, 'max_event_output_chars'), false)
  assert.equal(Object.hasOwn(config.runtime_profiles.default ?? {}, 'max_tool_result_chars'), false)
  assert.deepEqual(deprecatedKeys(config), [
    { old: 'turns.max_event_output_chars', new: 'turns.max_event_output_bytes' },
    { old: 'runtime_profiles.default.max_tool_result_chars', new: 'runtime_profiles.default.max_tool_result_bytes' }
  ])
})

test('the new _bytes keys are read as they are, with nothing deprecated', () => {
  const config = loadConfig({
    env: {},
    overrides: { turns: { max_event_output_bytes: 2048 }, runtime_profiles: { default: { max_tool_result_bytes: 777 } } }
  })
  assert.equal(config.turns.max_event_output_bytes, 2048)
  assert.equal(config.runtime_profiles.default?.max_tool_result_bytes, 777)
  assert.deepEqual(deprecatedKeys(config), [])
})

test('a configuration giving both the old and the new name of a key is an error naming both', () => {
  assert.throws(
    () => loadConfig({
      env: {},
      overrides: {
        turns: { max_event_output_chars: 4096, max_event_output_bytes: 4096 },
        runtime_profiles: { fast: { max_tool_result_chars: 10, max_tool_result_bytes: 20 } }
      }
    }),
    (err: unknown) => {
      assert.ok(err instanceof ConfigError)
      assert.deepEqual(err.problems, [
        'turns.max_event_output_chars and turns.max_event_output_bytes are both set; ' +
          'max_event_output_chars is the old name of max_event_output_bytes: keep only turns.max_event_output_bytes',
        'runtime_profiles.fast.max_tool_result_chars and runtime_profiles.fast.max_tool_result_bytes are both set; ' +
          'max_tool_result_chars is the old name of max_tool_result_bytes: keep only runtime_profiles.fast.max_tool_result_bytes'
      ])
      return true
    }
  )
})

test('the gateway logs one deprecation warning per old key at start, naming the new key', async (t) => {
  const logs = captureLogs('info')
  const g = await startGateway({
    logger: logs.logger,
    overrides: { turns: { max_event_output_chars: 4096 }, runtime_profiles: { default: { max_tool_result_chars: 1234 } } }
  })
  t.after(async () => { await g.close() })
  const warnings = logs.lines().filter((l) => l.config_key !== undefined)
  assert.deepEqual(warnings.map((l) => ({ level: l.level, key: l.config_key, renamed: l.renamed_to, msg: l.msg })), [
    {
      level: 40,
      key: 'turns.max_event_output_chars',
      renamed: 'turns.max_event_output_bytes',
      msg: 'config key turns.max_event_output_chars is deprecated: it is now turns.max_event_output_bytes; rename it'
    },
    {
      level: 40,
      key: 'runtime_profiles.default.max_tool_result_chars',
      renamed: 'runtime_profiles.default.max_tool_result_bytes',
      msg: 'config key runtime_profiles.default.max_tool_result_chars is deprecated: it is now runtime_profiles.default.max_tool_result_bytes; rename it'
    }
  ])
})
