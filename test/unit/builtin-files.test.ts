import { test } from 'node:test'
import assert from 'node:assert/strict'
import { execFile, execFileSync } from 'node:child_process'
import { promises as fs } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { pino } from 'pino'
import type { Tool, ToolContext, ToolResult } from '../../src/tools/contract.js'
import { createFileReadTool } from '../../src/tools/builtin/file-read.js'
import { createFileWriteTool } from '../../src/tools/builtin/file-write.js'
import { WorkspaceFiles } from '../../src/tools/builtin/workspace-files.js'

/** The call's context; the workspace is filled in by the tool wrapper of `tools()`. */
function context (signal: AbortSignal = new AbortController().signal): ToolContext {
  return { signal, turnId: 'turn-1', sessionId: 'session-1', callId: 'call-1', log: pino({ level: 'silent' }), workspaceDir: '', workspaceOwner: null, network: false }
}

interface BoundTool {
  execute (args: Record<string, unknown>, ctx: ToolContext): Promise<ToolResult>
}

/** A tool whose every call acts in `dir`, as the engine's context would say. */
function inWorkspace (tool: Tool, dir: string): BoundTool {
  return { execute: async (args, ctx) => await tool.execute(args, { ...ctx, workspaceDir: dir }) }
}

type After = { after: (fn: () => Promise<void>) => void }

async function scratch (t: After): Promise<string> {
  const dir = await fs.realpath(await fs.mkdtemp(path.join(os.tmpdir(), 'tollgate-files-')))
  t.after(async () => { await fs.rm(dir, { recursive: true, force: true }) })
  return dir
}

/** A workspace folder below a workspace root, as the layout makes them. */
async function workspace (t: After): Promise<string> {
  const dir = path.join(await scratch(t), 'ws')
  await fs.mkdir(dir)
  return dir
}

function tools (dir: string, limits: { maxReadBytes?: number, maxWriteBytes?: number } = {}): { read: BoundTool, write: BoundTool } {
  const files = new WorkspaceFiles({ root: path.dirname(dir) })
  return {
    read: inWorkspace(createFileReadTool({ maxReadBytes: limits.maxReadBytes ?? 1048576, files }), dir),
    write: inWorkspace(createFileWriteTool({ maxWriteBytes: limits.maxWriteBytes ?? 1048576, files }), dir)
  }
}

function refused (error: string): ToolResult {
  return { success: false, output: '', error }
}

test('file_read returns the contents of a text file', async (t) => {
  const dir = await workspace(t)
  await fs.writeFile(path.join(dir, 'hello.txt'), 'hello\nworld\n')
  const result = await tools(dir).read.execute({ path: 'hello.txt' }, context())
  assert.deepEqual(result, { success: true, output: 'hello\nworld\n', error: null })
})

test('file_read returns empty output for an empty file', async (t) => {
  const dir = await workspace(t)
  await fs.writeFile(path.join(dir, 'empty.txt'), '')
  const result = await tools(dir).read.execute({ path: 'empty.txt' }, context())
  assert.deepEqual(result, { success: true, output: '', error: null })
})

test('file_read reads the byte range given by offset and limit', async (t) => {
  const dir = await workspace(t)
  await fs.writeFile(path.join(dir, 'abc.txt'), 'abcdefghij')
  const result = await tools(dir).read.execute({ path: 'abc.txt', offset: 2, limit: 3 }, context())
  assert.equal(result.output, 'cde')
})

test('file_read truncates a file larger than maxReadBytes and says how big it is', async (t) => {
  const dir = await workspace(t)
  await fs.writeFile(path.join(dir, 'big.txt'), 'x'.repeat(100))
  const result = await tools(dir, { maxReadBytes: 10 }).read.execute({ path: 'big.txt' }, context())
  assert.equal(result.success, true)
  assert.equal(result.output, `${'x'.repeat(10)}\n[file truncated: 100 bytes total]`)
})

test('file_read refuses paths outside the workspace, and malformed paths', async (t) => {
  const dir = await workspace(t)
  const { read } = tools(dir)
  const results = []
  for (const p of ['../x', 'a/../../x', '/etc/passwd', 'a\0b', '  ']) results.push(await read.execute({ path: p }, context()))
  assert.deepEqual(results, [
    refused('path is outside the workspace: ../x'),
    refused('path is outside the workspace: a/../../x'),
    refused('path is outside the workspace: /etc/passwd'),
    refused('path must not contain NUL bytes'),
    refused('path must be a non-empty string')
  ])
})

test('file_read refuses to read through a symlink to /etc', async (t) => {
  const dir = await workspace(t)
  await fs.symlink('/etc', path.join(dir, 'etc'))
  const result = await tools(dir).read.execute({ path: 'etc/hostname' }, context())
  assert.equal(result.success, false)
  assert.match(result.error ?? '', /outside the workspace/)
})

test('file_read refuses a symlinked file that points outside', async (t) => {
  const dir = await workspace(t)
  await fs.symlink('/etc/passwd', path.join(dir, 'passwd'))
  const result = await tools(dir).read.execute({ path: 'passwd' }, context())
  assert.equal(result.success, false)
  assert.doesNotMatch(result.output, /root:/)
})

test('file_read refuses a directory', async (t) => {
  const dir = await workspace(t)
  await fs.mkdir(path.join(dir, 'sub'))
  const result = await tools(dir).read.execute({ path: 'sub' }, context())
  assert.deepEqual(result, { success: false, output: '', error: 'is a directory' })
})

test('file_read refuses a FIFO without blocking on it', async (t) => {
  const dir = await workspace(t)
  const fifo = path.join(dir, 'pipe')
  execFileSync('mkfifo', [fifo])
  const started = Date.now()
  const result = await tools(dir).read.execute({ path: 'pipe' }, context())
  assert.equal(result.success, false)
  assert.equal(result.error, 'not a regular file')
  assert.ok(Date.now() - started < 1000)
})

test('file_read refuses a binary file', async (t) => {
  const dir = await workspace(t)
  await fs.writeFile(path.join(dir, 'bin.dat'), Buffer.from([0x41, 0x00, 0x42]))
  const result = await tools(dir).read.execute({ path: 'bin.dat' }, context())
  assert.deepEqual(result, { success: false, output: '', error: 'binary file' })
})

test('file_read reports a missing file as a failure', async (t) => {
  const dir = await workspace(t)
  const result = await tools(dir).read.execute({ path: 'missing.txt' }, context())
  assert.deepEqual(result, { success: false, output: '', error: 'no such file or directory' })
})

test('file_read rejects arguments that do not match its schema', async (t) => {
  const dir = await workspace(t)
  const result = await tools(dir).read.execute({ path: 'x', offset: -1 }, context())
  assert.equal(result.success, false)
  assert.match(result.error ?? '', /^invalid arguments/)
})

test('file_write creates the file and its parent directories', async (t) => {
  const dir = await workspace(t)
  const result = await tools(dir).write.execute({ path: 'a/b/c.txt', content: 'héllo' }, context())
  assert.deepEqual(result, { success: true, output: `Wrote 6 bytes to ${path.join('a', 'b', 'c.txt')}`, error: null })
  assert.equal(await fs.readFile(path.join(dir, 'a', 'b', 'c.txt'), 'utf8'), 'héllo')
})

test('file_write refuses a missing parent directory when create_dirs is false', async (t) => {
  const dir = await workspace(t)
  const result = await tools(dir).write.execute({ path: 'nope/c.txt', content: 'x', create_dirs: false }, context())
  assert.equal(result.success, false)
  await assert.rejects(fs.stat(path.join(dir, 'nope')), { code: 'ENOENT' })
})

test('file_write replaces a file atomically, leaving no temporary file behind', async (t) => {
  const dir = await workspace(t)
  const target = path.join(dir, 'f.txt')
  await fs.writeFile(target, 'old contents')
  const before = await fs.stat(target)
  const result = await tools(dir).write.execute({ path: 'f.txt', content: 'new' }, context())
  assert.equal(result.success, true)
  assert.equal(await fs.readFile(target, 'utf8'), 'new')
  // A rename installs a new inode; an in-place rewrite would keep the old one.
  assert.notEqual((await fs.stat(target)).ino, before.ino)
  assert.deepEqual(await fs.readdir(dir), ['f.txt'])
})

test('file_write keeps the mode of the file it replaces', async (t) => {
  const dir = await workspace(t)
  const target = path.join(dir, 'script.sh')
  await fs.writeFile(target, 'old')
  await fs.chmod(target, 0o750)
  await tools(dir).write.execute({ path: 'script.sh', content: 'new' }, context())
  assert.equal((await fs.stat(target)).mode & 0o777, 0o750)
})

test('file_write appends when append is true', async (t) => {
  const dir = await workspace(t)
  const { write } = tools(dir)
  await write.execute({ path: 'log.txt', content: 'one\n' }, context())
  const result = await write.execute({ path: 'log.txt', content: 'two\n', append: true }, context())
  assert.equal(result.output, 'Wrote 4 bytes to log.txt')
  assert.equal(await fs.readFile(path.join(dir, 'log.txt'), 'utf8'), 'one\ntwo\n')
})

test('file_write refuses content larger than maxWriteBytes', async (t) => {
  const dir = await workspace(t)
  const result = await tools(dir, { maxWriteBytes: 4 }).write.execute({ path: 'f.txt', content: 'ééé' }, context())
  assert.equal(result.success, false)
  assert.match(result.error ?? '', /6 bytes/)
  await assert.rejects(fs.stat(path.join(dir, 'f.txt')), { code: 'ENOENT' })
})

test('file_write refuses to write through a symlink that points outside', async (t) => {
  const dir = await workspace(t)
  const outside = await workspace(t)
  await fs.writeFile(path.join(outside, 'victim.txt'), 'original')
  await fs.symlink(path.join(outside, 'victim.txt'), path.join(dir, 'link.txt'))
  const { write } = tools(dir)
  const replace = await write.execute({ path: 'link.txt', content: 'pwned' }, context())
  const append = await write.execute({ path: 'link.txt', content: 'pwned', append: true }, context())
  assert.equal(replace.success, false)
  assert.equal(append.success, false)
  assert.equal(await fs.readFile(path.join(outside, 'victim.txt'), 'utf8'), 'original')
})

test('file_write refuses to create a file through a dangling symlink that points outside', async (t) => {
  const dir = await workspace(t)
  const outside = await workspace(t)
  await fs.symlink(path.join(outside, 'planted.txt'), path.join(dir, 'dangling'))
  const result = await tools(dir).write.execute({ path: 'dangling', content: 'x', append: true }, context())
  assert.equal(result.success, false)
  await assert.rejects(fs.stat(path.join(outside, 'planted.txt')), { code: 'ENOENT' })
})

test('file_write writes to the target of a symlink that stays inside the workspace', async (t) => {
  const dir = await workspace(t)
  await fs.writeFile(path.join(dir, 'real.txt'), 'old')
  await fs.symlink('real.txt', path.join(dir, 'alias.txt'))
  const result = await tools(dir).write.execute({ path: 'alias.txt', content: 'new' }, context())
  assert.equal(result.output, 'Wrote 3 bytes to real.txt')
  assert.equal((await fs.lstat(path.join(dir, 'alias.txt'))).isSymbolicLink(), true)
  assert.equal(await fs.readFile(path.join(dir, 'real.txt'), 'utf8'), 'new')
})

test('file_write refuses paths outside the workspace', async (t) => {
  const dir = await workspace(t)
  const { write } = tools(dir)
  for (const p of ['../x', '/etc/passwd', 'a\0b']) {
    const result = await write.execute({ path: p, content: 'x' }, context())
    assert.equal(result.success, false, p)
  }
})

test('file_write does nothing once the call is cancelled', async (t) => {
  const dir = await workspace(t)
  const controller = new AbortController()
  controller.abort()
  const result = await tools(dir).write.execute({ path: 'f.txt', content: 'x' }, context(controller.signal))
  assert.deepEqual(result, { success: false, output: '', error: 'cancelled' })
  await assert.rejects(fs.stat(path.join(dir, 'f.txt')), { code: 'ENOENT' })
})

test('file_write accepts an absolute path inside the workspace', async (t) => {
  const dir = await workspace(t)
  const result = await tools(dir).write.execute({ path: path.join(dir, 'inside.txt'), content: 'x' }, context())
  assert.deepEqual(result, { success: true, output: 'Wrote 1 bytes to inside.txt', error: null })
})

test('the file tools follow a symlinked folder that stays inside the workspace', async (t) => {
  const dir = await workspace(t)
  await fs.mkdir(path.join(dir, 'real', 'deep'), { recursive: true })
  await fs.symlink('real/deep', path.join(dir, 'short'))
  await fs.symlink(path.join(dir, 'real'), path.join(dir, 'absolute'))
  const { read, write } = tools(dir)
  assert.equal((await write.execute({ path: 'short/new/f.txt', content: 'via link' }, context())).output, `Wrote 8 bytes to ${path.join('real', 'deep', 'new', 'f.txt')}`)
  assert.equal((await read.execute({ path: 'absolute/deep/new/f.txt' }, context())).output, 'via link')
  assert.equal(await fs.readFile(path.join(dir, 'real', 'deep', 'new', 'f.txt'), 'utf8'), 'via link')
})

test('a symlink whose `..` leaves the workspace is refused, one whose `..` stays inside is followed', async (t) => {
  const dir = await workspace(t)
  await fs.mkdir(path.join(dir, 'a'))
  await fs.writeFile(path.join(dir, 'top.txt'), 'top')
  await fs.symlink('../top.txt', path.join(dir, 'a', 'up'))
  await fs.symlink('../../ws/top.txt', path.join(dir, 'a', 'out-and-back'))
  const { read } = tools(dir)
  assert.equal((await read.execute({ path: 'a/up' }, context())).output, 'top')
  assert.deepEqual(await read.execute({ path: 'a/out-and-back' }, context()), refused('path resolves outside the workspace: a/out-and-back'))
})

test('a symlink loop is refused as too many levels of links', async (t) => {
  const dir = await workspace(t)
  await fs.symlink('b', path.join(dir, 'a'))
  await fs.symlink('a', path.join(dir, 'b'))
  assert.deepEqual(await tools(dir).read.execute({ path: 'a/x' }, context()), refused('too many levels of symbolic links'))
})

test('file_write refuses a file where a folder of the path should be', async (t) => {
  const dir = await workspace(t)
  await fs.writeFile(path.join(dir, 'plain'), 'x')
  assert.deepEqual(await tools(dir).write.execute({ path: 'plain/f.txt', content: 'x' }, context()), refused('a path component is not a directory'))
})

test('file_write creates a path deeper than the symlink bound', async (t) => {
  const dir = await workspace(t)
  const deep = Array.from({ length: 60 }, (_, i) => `d${i}`).join('/')
  const result = await tools(dir).write.execute({ path: `${deep}/f.txt`, content: 'deep' }, context())
  assert.equal(result.success, true, result.error ?? '')
  assert.equal(await fs.readFile(path.join(dir, deep, 'f.txt'), 'utf8'), 'deep')
})

/**
 * A folder `sub` swapped for a symlink to `target` and back as fast as a process can, until
 * the returned stop() (written in JavaScript so it needs nothing the machine may lack).
 */
function swapper (dir: string, target: string): { stop: () => Promise<void> } {
  const loop = `
    const fs = require('node:fs'); process.chdir(${JSON.stringify(dir)})
    fs.mkdirSync('d'); fs.symlinkSync(${JSON.stringify(target)}, 'l')
    const swap = (a, b) => { try { fs.renameSync(a, b) } catch {} }
    for (let n = 0; !fs.existsSync('stop'); n++) {
      // A folder the tools made meanwhile is moved aside, so the loop never sticks.
      try { fs.renameSync('d', 'sub') } catch { swap('sub', 'aside' + n); swap('d', 'sub') }
      swap('sub', 'd'); swap('l', 'sub'); swap('sub', 'l')
    }`
  const child = execFile(process.execPath, ['-e', loop])
  const exited = new Promise<void>((resolve) => child.once('exit', () => { resolve() }))
  return { stop: async () => { await fs.writeFile(path.join(dir, 'stop'), ''); await exited } }
}

test('a folder swapped for a symlink to an outside folder while the file tools run never leads them outside', async (t) => {
  const dir = await workspace(t)
  const outside = await scratch(t)
  const marker = 'OUTSIDE-MARKER-7f3a'
  await fs.writeFile(path.join(outside, 'secret.txt'), marker)
  const { read, write } = tools(dir)
  const swapping = swapper(dir, outside)
  const results: ToolResult[] = []
  try {
    for (let i = 0; i < 300; i++) {
      results.push(await write.execute({ path: `sub/w${i}.txt`, content: 'x', create_dirs: i % 2 === 0 }, context()))
      if (i % 2 === 0) results.push(await read.execute({ path: 'sub/secret.txt' }, context()))
    }
  } finally {
    await swapping.stop()
  }
  assert.deepEqual(await fs.readdir(outside), ['secret.txt'])
  assert.equal(results.some((r) => r.output.includes(marker)), false)
  // The race did happen: some calls met the link and were refused, some found the folder.
  assert.ok(results.some((r) => r.error === 'path resolves outside the workspace: sub/secret.txt' || r.error?.startsWith('path resolves outside the workspace: sub/w') === true))
  assert.ok(results.some((r) => r.success))
})
