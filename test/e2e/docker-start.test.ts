/**
 * The Docker image's start, without Docker (no engine runs here): the gateway compiled by the
 * build's tsc, laid out as the runtime stage lays out /app (root-owned, read-only to the gateway),
 * started as an unprivileged user with exactly the runtime stage's ENV (its /data moved to a
 * scratch folder owned by that user) and the jwt config the README's `docker run` mounts.
 */
import { after, before, test } from 'node:test'
import assert from 'node:assert/strict'
import { execFile, spawn } from 'node:child_process'
import { existsSync } from 'node:fs'
import { chmod, chown, cp, mkdir, mkdtemp, readdir, rm, stat, symlink, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { promisify } from 'node:util'
import { runtimeEnv } from '../helpers/dockerfile.js'
import { TEST_AUDIENCE, TEST_ISSUER, TEST_SECRET } from '../helpers/tokens.js'

const run = promisify(execFile)
const REPO = resolve('.')
/** `nobody`: tests run as root here; run as someone else, the gateway is already unprivileged. */
const AS_ROOT = process.getuid?.() === 0
const USER = AS_ROOT ? { uid: 65534, gid: 65534 } : {}

let scratch = ''
let app = ''

before(async () => {
  scratch = await mkdtemp(join(tmpdir(), 'tollgate-image-'))
  await chmod(scratch, 0o755)
  app = join(scratch, 'app')
  await mkdir(app)
  // The build stage's `npm run build` compiles the gateway with this tsc config; its output goes
  // straight into the scratch /app, so a concurrent build of the checkout's dist/ is not disturbed.
  await run(process.execPath, [join(REPO, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.build.json', '--outDir', join(app, 'dist')], {
    cwd: REPO, timeout: 240_000
  })
  await cp(join(REPO, 'package.json'), join(app, 'package.json'))
  await cp(join(REPO, 'public'), join(app, 'public'), { recursive: true })
  await symlink(join(REPO, 'node_modules'), join(app, 'node_modules'))
  await mkdir(join(scratch, 'etc'))
  await writeFile(join(scratch, 'etc', 'tollgate.toml'), [
    '[auth]', 'mode = "jwt"', 'secret_env = "TOLLGATE_JWT_SECRET"', `issuer = "${TEST_ISSUER}"`, `audience = "${TEST_AUDIENCE}"`
  ].join('\n'))
  // Root-owned and closed to writes, as COPY leaves /app; run as its owner, even the owner may not write.
  if (!AS_ROOT) await chmod(app, 0o555)
})

after(async () => {
  if (scratch === '') return
  await chmod(app, 0o755).catch(() => {})
  await rm(scratch, { recursive: true, force: true })
})

/** The runtime stage's environment with its /data moved into `data`, listening on a free port. */
async function imageEnv (data: string, extra: Record<string, string | undefined> = {}): Promise<NodeJS.ProcessEnv> {
  const image = await runtimeEnv()
  const env: NodeJS.ProcessEnv = { PATH: process.env.PATH, HOME: '/nonexistent' }
  for (const [key, value] of Object.entries(image)) env[key] = value.replace(/^\/data(?=\/|$)/, data)
  Object.assign(env, {
    TOLLGATE_PORT: '0',
    TOLLGATE_CONFIG: join(scratch, 'etc', 'tollgate.toml'),
    TOLLGATE_JWT_SECRET: TEST_SECRET,
    TOLLGATE_LOG_LEVEL: 'info'
  }, extra)
  for (const [key, value] of Object.entries(env)) if (value === undefined) delete env[key]
  return env
}

/** A data folder like the image's /data: owned by the gateway's user, nobody else may write it. */
async function dataFolder (name: string): Promise<string> {
  const data = join(scratch, name)
  await mkdir(join(data, 'workspace'), { recursive: true })
  if (AS_ROOT) {
    await chown(data, 65534, 65534)
    await chown(join(data, 'workspace'), 65534, 65534)
  }
  await chmod(data, 0o700)
  return data
}

interface Started { port: number, stop: () => Promise<number | null> }

/** Starts `node dist/src/main.js` in /app as the image's CMD does; rejects with the output if it exits first. */
async function startImage (env: NodeJS.ProcessEnv): Promise<Started> {
  const child = spawn(process.execPath, ['dist/src/main.js'], { cwd: app, env, stdio: ['ignore', 'pipe', 'pipe'], ...USER })
  const exited = new Promise<number | null>((resolve) => { child.on('exit', (code) => { resolve(code) }) })
  let output = ''
  const port = await new Promise<number>((resolve, reject) => {
    const timer = setTimeout(() => { reject(new Error(`the gateway did not start; output:\n${output}`)) }, 60_000)
    const read = (chunk: Buffer): void => {
      output += chunk.toString('utf8')
      const m = /tollgate listening on http:\/\/[^"\s]*:(\d+)/.exec(output)
      if (m?.[1] !== undefined) {
        clearTimeout(timer)
        resolve(Number(m[1]))
      }
    }
    child.stdout.on('data', read)
    child.stderr.on('data', read)
    void exited.then((code) => {
      clearTimeout(timer)
      reject(new Error(`the gateway exited with ${String(code)}; output:\n${output}`))
    })
  })
  return {
    port,
    async stop () {
      child.kill('SIGTERM')
      return await exited
    }
  }
}

test('as an unprivileged user in a root-owned /app, the built gateway starts with the image\'s defaults and /readyz is 200', async () => {
  const data = await dataFolder('data')
  const gateway = await startImage(await imageEnv(data))
  try {
    const ready = await fetch(`http://127.0.0.1:${gateway.port}/readyz`)
    assert.equal(ready.status, 200)
    assert.deepEqual(await ready.json(), { status: 'ready' })
  } finally {
    assert.equal(await gateway.stop(), 0)
  }
  const db = await stat(join(data, 'tollgate.db'))
  if (AS_ROOT) assert.equal(db.uid, 65534, 'the store file belongs to the gateway\'s user')
  assert.deepEqual((await readdir(app)).sort(), ['dist', 'node_modules', 'package.json', 'public'], 'nothing was written into /app')
})

test('without the image\'s store path the same start fails on the read-only /app, as it did before the image set it', async () => {
  const data = await dataFolder('data-unset')
  const env = await imageEnv(data, { TOLLGATE_SQLITE_PATH: undefined })
  await assert.rejects(startImage(env), /EACCES: permission denied, mkdir '.*\/app\/data'/)
  assert.equal(existsSync(join(app, 'data')), false)
})
