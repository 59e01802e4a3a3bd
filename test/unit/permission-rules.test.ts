import { test } from 'node:test'
import assert from 'node:assert/strict'
import { RuleError, type KnownTools } from '../../src/approval/permission-rules.js'
import { compileProfilePermissions, decidePermission, type PermissionsMode, type ProfilePermissions } from '../../src/approval/permissions.js'
import { loadShellSyntax } from '../../src/approval/shell-parser.js'
import { BYPASS_CORPUS } from '../fixtures/shell-bypass-corpus.js'

const syntax = await loadShellSyntax()
const BUILTINS = ['shell', 'file_read', 'file_write', 'http_request']
const known: KnownTools = { has: (n) => BUILTINS.includes(n), mcpServers: new Set(['docs']) }

function rules (source: { allow?: string[], ask?: string[], deny?: string[] }, mode: PermissionsMode = 'enforce'): ProfilePermissions {
  const lists = { allow: source.allow ?? [], ask: source.ask ?? [], deny: source.deny ?? [] }
  const compiled = compileProfilePermissions({ ...lists, mode }, known, syntax)
  assert.ok(compiled !== null)
  return compiled
}

const ACCEPTANCE = rules({ allow: ['shell(ls:*)', 'shell(git status)', 'file_write(notes/**)'], deny: ['shell(rm:*)'] })
const shell = (command: string, p = ACCEPTANCE): ReturnType<typeof decidePermission> => decidePermission(p, 'shell', { command }, () => false)

test('a prefix rule allows the command and its arguments on word boundaries only', () => {
  assert.equal(shell('ls -la').outcome, 'allow')
  assert.equal(shell('ls').outcome, 'allow')
  assert.equal(shell('lsblk').outcome, 'default')
  assert.equal(shell('ls -la').rule, 'shell(ls:*)')
})

test('an exact rule allows only that command', () => {
  assert.equal(shell('git status').outcome, 'allow')
  assert.equal(shell('git  status').outcome, 'allow')
  assert.equal(shell('git status --short').outcome, 'default')
  assert.equal(shell('git status; touch p').outcome, 'default')
})

test('every simple command must be allowed: separators and pipes leave the rest to the profile', () => {
  for (const command of ['ls; touch p', 'ls | tee p', 'ls && touch p', 'ls || touch p', 'ls & touch p', '(ls; touch p)', '{ ls; touch p; }', 'ls\ntouch p']) {
    const decision = shell(command)
    assert.equal(decision.outcome, 'default', command)
    assert.deepEqual(decision.needs, [`${command.includes('tee') ? 'tee' : 'touch'} p: no rule allows it`], command)
  }
})

test('a denied command anywhere denies the call and names the rule, through every wrapper', () => {
  for (const command of [
    'ls && rm -f keep.txt', 'env X=1 rm -f keep.txt', "sh -c 'rm -f keep.txt'", "bash -c 'ls; rm -f keep.txt'", 'command rm -f keep.txt',
    'nice rm -f keep.txt', 'nice -n 5 rm x', 'nohup rm x', 'timeout 5 rm x', 'time rm x', 'ls | xargs rm', 'sudo -u root rm x',
    '/bin/rm x', 'r\\m x', '"rm" x', "'r'm x", 'ls $(rm x)', 'exec rm x', 'env -i PATH=/bin rm x', "sh -c \"sh -c 'rm x'\"", '! rm x'
  ]) {
    const decision = shell(command)
    assert.equal(decision.outcome, 'deny', command)
    assert.equal(decision.rule, 'shell(rm:*)', command)
  }
})

test('substitutions, eval, source, redirections to files and unreadable commands are never allowed by a rule', () => {
  for (const command of [
    'ls $(touch p)', 'ls `touch p`', 'eval touch p', 'ls > p', 'ls >> p', 'ls &> p', 'ls 2> p', 'ls <(touch p)', 'source x.sh', '. x.sh',
    "ls 'unterminated", 'ls "$(touch p)"', 'X=$(touch p) ls', 'ls ${X:-$(touch p)}', 'cat <<EOF\n$(touch p)\nEOF', 'f() { touch p; }; f',
    'if ls; then touch p; fi', 'for x in a; do ls; done', 'PATH=. ls', 'LD_PRELOAD=x.so ls', 'IFS=x ls', 'env PATH=. ls', 'ls > /dev/null; ls >p'
  ]) {
    assert.equal(shell(command).outcome, 'ask', command)
  }
})

test('harmless redirections keep an allowed command allowed', () => {
  assert.equal(shell('ls 2>/dev/null').outcome, 'allow')
  assert.equal(shell('ls 2>&1').outcome, 'allow')
  assert.equal(shell('ls > /dev/null').outcome, 'allow')
})

test('bypass corpus: no spelling of a command outside the allow rules is allowed', () => {
  for (const command of BYPASS_CORPUS) {
    const decision = shell(command)
    assert.notEqual(decision.outcome, 'allow', `${JSON.stringify(command)} was allowed by ${decision.rule}`)
  }
})

test('ask rules win over allow rules and name themselves', () => {
  const p = rules({ allow: ['shell(git:*)'], ask: ['shell(git push:*)'] })
  assert.equal(shell('git log', p).outcome, 'allow')
  const decision = shell('git log && git push origin main', p)
  assert.equal(decision.outcome, 'ask')
  assert.equal(decision.rule, 'shell(git push:*)')
  assert.deepEqual(decision.needs, ['git push origin main: matches shell(git push:*)'])
})

test('a session grant of a simple command counts only for that command', () => {
  const granted = (command: string): boolean => command === 'touch p'
  assert.equal(decidePermission(ACCEPTANCE, 'shell', { command: 'ls; touch p' }, granted).outcome, 'allow')
  assert.equal(decidePermission(ACCEPTANCE, 'shell', { command: 'ls; touch q' }, granted).outcome, 'default')
  assert.equal(decidePermission(ACCEPTANCE, 'shell', { command: 'ls > x; touch p' }, granted).outcome, 'ask')
})

test('file rules match workspace-relative globs and never a path outside the workspace', () => {
  const write = (path: string): string => decidePermission(ACCEPTANCE, 'file_write', { path, content: 'x' }, () => false).outcome
  assert.equal(write('notes/a.txt'), 'allow')
  assert.equal(write('./notes/deep/b.txt'), 'allow')
  assert.equal(write('other.txt'), 'default')
  assert.equal(write('notes/../other.txt'), 'default')
  assert.equal(write('../notes/a.txt'), 'default')
  assert.equal(write('/notes/a.txt'), 'default')
  const p = rules({ deny: ['file_read(secrets/*)'] })
  assert.equal(decidePermission(p, 'file_read', { path: 'secrets/key' }, () => false).outcome, 'deny')
  assert.equal(decidePermission(p, 'file_read', { path: '../x' }, () => false).outcome, 'deny', 'a deny rule catches a path it cannot place')
})

test('http and MCP rules match by domain and by server__tool name', () => {
  const p = rules({ allow: ['http_request(domain:api.example.com)', 'docs__search'], deny: ['http_request(domain:*.evil.test)'] })
  assert.equal(decidePermission(p, 'http_request', { url: 'https://api.example.com/v1' }, () => false).outcome, 'allow')
  assert.equal(decidePermission(p, 'http_request', { url: 'https://api.example.com.evil.test/' }, () => false).outcome, 'deny')
  assert.equal(decidePermission(p, 'http_request', { url: 'https://example.com/' }, () => false).outcome, 'default')
  assert.equal(decidePermission(p, 'docs__search', { q: 'x' }, () => false).outcome, 'allow')
})

test('unknown tools and malformed specifiers are errors', () => {
  for (const [rule, message] of [
    ['shel(ls)', /unknown tool "shel"/], ['other__x', /unknown tool/], ['shell(ls; rm)', /plain words/], ['file_write(/etc/**)', /workspace-relative/],
    ['http_request(api.example.com)', /domain:/], ['docs__search(x)', /takes no specifier/], ['shell()', /empty specifier/]
  ] as const) {
    assert.throws(() => rules({ allow: [rule] }), (err: unknown) => err instanceof RuleError && message.test(err.message), rule)
  }
})

test('the policy version changes with the rules and the mode, not with their order', () => {
  const a = rules({ allow: ['shell(ls:*)', 'shell(git status)'] })
  const b = rules({ allow: ['shell(git status)', 'shell(ls:*)'] })
  const c = rules({ allow: ['shell(ls:*)'] })
  const d = rules({ allow: ['shell(ls:*)', 'shell(git status)'] }, 'shadow')
  assert.equal(a.version, b.version)
  assert.notEqual(a.version, c.version)
  assert.notEqual(a.version, d.version)
  assert.match(a.version, /^sha256:[0-9a-f]{16}$/)
})

test('a command of many parts shows the person at most twenty of them', () => {
  const command = Array.from({ length: 50 }, (_v, i) => `touch f${i}`).join('; ')
  const decision = shell(command)
  assert.equal(decision.outcome, 'default')
  assert.equal(decision.needs.length, 21)
  assert.equal(decision.needs.at(-1), '… and 30 more')
  assert.equal(decision.grantable?.length, 50, 'always still grants every part it was shown for')
})
