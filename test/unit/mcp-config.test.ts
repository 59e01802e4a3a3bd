import { test } from 'node:test'
import assert from 'node:assert/strict'
import { ConfigError, loadConfig } from '../../src/core/config.js'

function load (overrides: unknown): ReturnType<typeof loadConfig> {
  return loadConfig({ env: {}, overrides })
}

test('MCP defaults: enabled, eager loading, no servers, agents without bundles', () => {
  const config = load({})
  assert.equal(config.mcp.enabled, true)
  assert.equal(config.mcp.deferred_loading, false)
  assert.deepEqual(config.mcp.servers, {})
  assert.deepEqual(config.agents.default?.mcp_bundles, [])
  assert.deepEqual(config.runtime_profiles.default?.tool_filter_groups, [])
  assert.equal(config.delegate.max_depth, 2)
})

test('a server entry gets its defaults and filter groups default to dynamic', () => {
  const config = load({
    mcp: { servers: { files: { transport: 'stdio', command: 'node' } } },
    runtime_profiles: { default: { tool_filter_groups: [{ tools: ['files__*'] }] } }
  })
  assert.deepEqual(config.mcp.servers.files, { transport: 'stdio', command: 'node', args: [], env: {}, env_from: {}, headers: {}, headers_from_env: {} })
  assert.deepEqual(config.runtime_profiles.default?.tool_filter_groups, [{ mode: 'dynamic', tools: ['files__*'], keywords: [] }])
})

test('a server name that would make <server>__<tool> ambiguous is refused', () => {
  for (const name of ['a__b', 'trailing_', '-lead', 'dot.ted']) {
    assert.throws(() => load({ mcp: { servers: { [name]: { transport: 'stdio', command: 'x' } } } }), ConfigError, name)
  }
})

test('a stdio server needs a command and an http server a URL', () => {
  assert.throws(() => load({ mcp: { servers: { s: { transport: 'stdio' } } } }), /mcp\.servers\.s\.command is required/)
  assert.throws(() => load({ mcp: { servers: { s: { transport: 'http' } } } }), /mcp\.servers\.s\.url is required/)
  assert.throws(() => load({ mcp: { servers: { s: { transport: 'http', url: 'ftp://x' } } } }), ConfigError)
  assert.throws(() => load({ mcp: { servers: { s: { transport: 'http', url: 'http://' } } } }), /must be an http\(s\) URL/)
})

test('an unknown key in a server entry is refused', () => {
  assert.throws(() => load({ mcp: { servers: { s: { transport: 'stdio', command: 'x', shell: true } } } }), /mcp\.servers\.s\.shell: unknown key/)
})

test('an agent can bundle only defined servers and delegate only to defined agents', () => {
  assert.throws(() => load({ agents: { default: { mcp_bundles: ['nope'] } } }), /agents\.default\.mcp_bundles names "nope"/)
  assert.throws(() => load({ agents: { default: { delegate_agents: ['ghost'] } } }), /agents\.default\.delegate_agents names "ghost"/)
})
