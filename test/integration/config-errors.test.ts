/**
 * Config errors that teach: each problem is one line naming the key's full path and the fix, and
 * a configuration with several problems lists them all, from the library and from the real process.
 */
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { ConfigError, loadConfig } from '../../src/core/config.js'
import { buildServer } from '../../src/app/server.js'

const REPO = fileURLToPath(new URL('../..', import.meta.url))
const OPENAI = { kind: 'openai', base_url: 'https://api.openai.com/v1' }

function loadError (overrides: unknown): ConfigError {
  try {
    loadConfig({ env: {}, overrides })
  } catch (err) {
    assert.ok(err instanceof ConfigError, String(err))
    return err
  }
  assert.fail('the configuration was accepted')
}

async function startError (overrides: unknown, env: NodeJS.ProcessEnv = {}): Promise<ConfigError> {
  const config = loadConfig({ env: {}, overrides: { log: { level: 'silent' }, store: { kind: 'memory' }, ...overrides as object } })
  try {
    const gateway = await buildServer({ config, env })
    await gateway.close()
  } catch (err) {
    assert.ok(err instanceof ConfigError, String(err))
    return err
  }
  assert.fail('the gateway started')
}

function oneLine (err: ConfigError): string {
  assert.equal(err.problems.length, 1, err.message)
  assert.ok(!err.message.includes('\n'), err.message)
  return err.message
}

test('an enum value outside the allowed ones names the key and lists the allowed values', () => {
  assert.equal(oneLine(loadError({ risk_profiles: { default: { level: 'supervise' } } })),
    'invalid configuration: risk_profiles.default.level must be one of "readonly", "supervised", "full" (got "supervise")')
})

test('a provider URL without its scheme names the key and the URL to write instead', () => {
  assert.equal(oneLine(loadError({ providers: { openai: { ...OPENAI, base_url: 'api.openai.com/v1' } }, agents: { default: { provider: 'openai' } } })),
    'invalid configuration: providers.openai.base_url "api.openai.com/v1" has no scheme; write it as "https://api.openai.com/v1"')
})

test('a misspelt key is named with the key it probably meant', () => {
  assert.equal(oneLine(loadError({ server: { prot: 9090 } })), 'invalid configuration: server.prot: unknown key; did you mean "port"?')
})

test('an unknown tool in an agent fails the start, naming the agent\'s key and the tool it probably meant', async () => {
  assert.equal(oneLine(await startError({ agents: { default: { tools: ['shel', 'file_read'] } } })),
    'invalid configuration: agents.default.tools: unknown tool "shel"; did you mean "shell"?')
})

test('an unset api_key_env of a provider an agent uses fails the start, naming the key and the variable to export', async () => {
  const err = await startError({ providers: { openai: { ...OPENAI, api_key_env: 'OPENAI_API_KEY' } }, agents: { default: { provider: 'openai' } } })
  assert.equal(oneLine(err), 'invalid configuration: providers.openai.api_key_env: environment variable OPENAI_API_KEY is not set; ' +
    'export OPENAI_API_KEY before starting (agents.default uses this provider), or remove api_key_env if the server needs no key')
})

test('the api_key_env of a provider no agent uses is optional, and a set one starts', async () => {
  const unused = loadConfig({ env: {}, overrides: { log: { level: 'silent' }, store: { kind: 'memory' }, providers: { openai: { ...OPENAI, api_key_env: 'OPENAI_API_KEY' } } } })
  const gateway = await buildServer({ config: unused, env: {} })
  await gateway.close()
  const used = loadConfig({ env: {}, overrides: { log: { level: 'silent' }, store: { kind: 'memory' }, providers: { openai: { ...OPENAI, api_key_env: 'OPENAI_API_KEY' } }, agents: { default: { provider: 'openai' } } } })
  const started = await buildServer({ config: used, env: { OPENAI_API_KEY: 'sk-test' } })
  await started.close()
})

test('every problem of a configuration is listed, one line each, not only the first', () => {
  const err = loadError({
    server: { prot: 1, port: 'x' },
    log: { level: 'loud' },
    agents: { default: { provider: 'opnai' } },
    providers: { openai: OPENAI }
  })
  assert.deepEqual(err.problems, [
    'server.prot: unknown key; did you mean "port"?',
    'server.port must be integer (got "x")',
    'log.level must be one of "fatal", "error", "warn", "info", "debug", "trace", "silent" (got "loud")',
    'agents.default.provider "opnai" is not defined under [providers]; did you mean "openai"?'
  ])
  assert.equal(err.message, `invalid configuration, 4 problems:\n${err.problems.map((p) => `  - ${p}`).join('\n')}`)
})

test('the gateway process prints every problem of its config file and exits 2 without a stack trace', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'tollgate-config-errors-'))
  t.after(() => rm(dir, { recursive: true, force: true }))
  const file = join(dir, 'tollgate.toml')
  await writeFile(file, [
    '[server]', 'prot = 9090',
    '[risk_profiles.default]', 'level = "supervise"'
  ].join('\n'))
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], {
    cwd: REPO,
    env: { PATH: process.env.PATH, TOLLGATE_CONFIG: file },
    stdio: ['ignore', 'pipe', 'pipe']
  })
  let stderr = ''
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => { stderr += chunk })
  const code = await new Promise<number | null>((resolve) => child.on('exit', resolve))
  assert.equal(code, 2)
  assert.equal(stderr, 'tollgate: invalid configuration, 2 problems:\n' +
    '  - server.prot: unknown key; did you mean "port"?\n' +
    '  - risk_profiles.default.level must be one of "readonly", "supervised", "full" (got "supervise")\n')
})
