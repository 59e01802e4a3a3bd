/**
 * `redocly lint` with its recommended rules (redocly.yaml relaxes none) over both API documents,
 * offline: the network is refused inside the linter's process and any attempt fails the test
 * (redocly.yaml turns its telemetry off).
 */
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { readFile } from 'node:fs/promises'
import { promisify } from 'node:util'
import { parse } from 'yaml'

const run = promisify(execFile)

interface LintReport { totals: { errors: number, warnings: number, ignored: number }, problems: Array<{ ruleId: string, message: string }> }

async function lint (document: string): Promise<{ report: LintReport, stderr: string }> {
  const { stdout, stderr } = await run(process.execPath, [
    '--import', './test/fixtures/no-network.mjs', 'node_modules/@redocly/cli/bin/cli.js', 'lint', document, '--format=json'
  ], { env: { ...process.env, REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true' }, timeout: 60_000 })
  return { report: JSON.parse(stdout) as LintReport, stderr }
}

test('redocly.yaml lints with the recommended rules, relaxes none and keeps telemetry off', async () => {
  assert.deepEqual(parse(await readFile('redocly.yaml', 'utf8')), { extends: ['recommended'], telemetry: 'off' })
})

for (const document of ['openapi.yaml', 'asyncapi.yaml']) {
  test(`redocly lint finds no error and no warning in ${document}, without touching the network`, async () => {
    const { report, stderr } = await lint(document)
    const problems = report.problems.map((p) => `${p.ruleId}: ${p.message}`).join('\n')
    assert.deepEqual(report.totals, { errors: 0, warnings: 0, ignored: 0 }, problems)
    assert.doesNotMatch(stderr, /NETWORK ATTEMPT/)
  })
}
