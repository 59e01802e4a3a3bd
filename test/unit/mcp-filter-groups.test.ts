import { test } from 'node:test'
import assert from 'node:assert/strict'
import type { ToolFilterGroup } from '../../schemas/config.js'
import { globMatches, matchesAlwaysGroup, visibleUnderGroups } from '../../src/tools/scope/filter-groups.js'

test('a pattern without a star matches only the exact name', () => {
  assert.equal(globMatches('web__echo', 'web__echo'), true)
  assert.equal(globMatches('web__echo', 'web__echo2'), false)
})

test('a star matches by prefix and suffix with a length check', () => {
  assert.equal(globMatches('web__*', 'web__echo'), true)
  assert.equal(globMatches('*__echo', 'web__echo'), true)
  assert.equal(globMatches('web*echo', 'web__echo'), true)
  assert.equal(globMatches('ab*ba', 'aba'), false)
  assert.equal(globMatches('*', 'anything'), true)
})

test('only the first star is a wildcard; later stars are literal', () => {
  assert.equal(globMatches('a*b*', 'axxb*'), true)
  assert.equal(globMatches('a*b*', 'axxbc'), false)
})

test('without groups every tool is visible', () => {
  assert.equal(visibleUnderGroups([], 'web__echo', ''), true)
})

test('an always group keeps its tools visible whatever the message says', () => {
  const groups: ToolFilterGroup[] = [{ mode: 'always', tools: ['web__*'], keywords: [] }]
  assert.equal(visibleUnderGroups(groups, 'web__echo', 'unrelated'), true)
  assert.equal(matchesAlwaysGroup(groups, 'web__echo'), true)
})

test('a dynamic group shows its tools only when a keyword occurs in the message, case-insensitively', () => {
  const groups: ToolFilterGroup[] = [{ mode: 'dynamic', tools: ['web__weather_*'], keywords: ['Forecast'] }]
  assert.equal(visibleUnderGroups(groups, 'web__weather_forecast', 'give me the FORECAST'), true)
  assert.equal(visibleUnderGroups(groups, 'web__weather_forecast', 'hello'), false)
  assert.equal(matchesAlwaysGroup(groups, 'web__weather_forecast'), false)
})

test('with groups present, a tool no group pattern matches is hidden', () => {
  const groups: ToolFilterGroup[] = [{ mode: 'always', tools: ['web__echo'], keywords: [] }]
  assert.equal(visibleUnderGroups(groups, 'web__add', 'anything'), false)
})

test('a dynamic group without keywords never shows its tools', () => {
  assert.equal(visibleUnderGroups([{ mode: 'dynamic', tools: ['web__*'], keywords: [] }], 'web__echo', 'web echo'), false)
})
