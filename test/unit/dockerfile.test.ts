/**
 * Docker cannot run on this machine, so the Dockerfile is checked statically: its stages, user,
 * data volume, healthcheck and stop signal, that everything it copies exists and is not
 * dockerignored, and that its HEALTHCHECK command really tells a live gateway from a dead one.
 * test/e2e/docker-start.test.ts starts the built gateway the way the runtime stage would.
 */
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { existsSync } from 'node:fs'
import { readFile } from 'node:fs/promises'
import { promisify } from 'node:util'
import { all, execForm, runtimeEnv, stages, type Stage } from '../helpers/dockerfile.js'
import { startGateway } from '../helpers/gateway.js'

const run = promisify(execFile)

test('the Dockerfile is multi-stage: a build stage with python3, make and g++, and a node:24-slim runtime', async () => {
  const [build, runtime, ...more] = await stages()
  assert.ok(build !== undefined && runtime !== undefined)
  assert.equal(more.length, 0)
  assert.equal(build.name, 'build')
  assert.match(build.from, /^node:24(-slim)?$/)
  const installs = all(build, 'RUN').join(' ')
  for (const pkg of ['python3', 'make', 'g++']) assert.ok(installs.split(/\s+/).includes(pkg), `the build stage installs ${pkg}`)
  assert.match(installs, /npm ci/)
  assert.match(installs, /npm run build/)
  assert.match(installs, /npm prune --omit=dev/)
  assert.equal(runtime.from, 'node:24-slim')
  assert.equal(all(runtime, 'RUN').some((r) => /apt-get install/.test(r)), false, 'no compilers in the runtime image')
  for (const copy of all(runtime, 'COPY')) assert.match(copy, /^--from=build /, `the runtime only copies build output: ${copy}`)
})

test('the runtime stage runs as a non-root user, stops on SIGTERM and starts the compiled entry point directly', async () => {
  const runtime = (await stages())[1] as Stage
  const users = all(runtime, 'USER')
  assert.equal(users.length, 1)
  assert.doesNotMatch(users[0] ?? '', /^(root|0)(:|$)/)
  const userAt = runtime.instructions.findIndex((i) => i.op === 'USER')
  const cmdAt = runtime.instructions.findIndex((i) => i.op === 'CMD')
  assert.ok(userAt !== -1 && userAt < cmdAt, 'USER comes before CMD')
  assert.deepEqual(all(runtime, 'STOPSIGNAL'), ['SIGTERM'])
  const cmd = execForm(all(runtime, 'CMD')[0] ?? '')
  const pkg = JSON.parse(await readFile('package.json', 'utf8')) as { scripts: Record<string, string> }
  // `npm start` execs the gateway (its shell leaves no process between npm and node); CMD runs it directly.
  assert.equal(`exec ${cmd.join(' ')}`, pkg.scripts.start, 'CMD is what `npm start` runs, without npm in between')
  assert.match(pkg.scripts.build ?? '', /tsc -p tsconfig\.build\.json/)
  const env = all(runtime, 'ENV').join(' ')
  assert.match(env, /TOLLGATE_HOST=0\.0\.0\.0/)
  assert.match(await readFile('Dockerfile', 'utf8'), /auth\.mode = "jwt"/, 'the Dockerfile says why 0.0.0.0 needs jwt auth')
})

test('the runtime stage keeps everything the gateway writes in a /data volume owned by the unprivileged user', async () => {
  const runtime = (await stages())[1] as Stage
  const env = await runtimeEnv()
  assert.equal(env.TOLLGATE_SQLITE_PATH, '/data/tollgate.db', 'the store file lives in the volume')
  assert.equal(env.TOLLGATE_WORKSPACE, '/data/workspace', 'the tools\' workspace lives in the volume')
  const volumeAt = runtime.instructions.findIndex((i) => i.op === 'VOLUME')
  assert.ok(volumeAt !== -1, 'VOLUME is declared')
  assert.deepEqual(execForm(runtime.instructions[volumeAt]?.args ?? ''), ['/data'])
  const chownAt = runtime.instructions.findIndex((i) => i.op === 'RUN' && /chown -R node:node \/data/.test(i.args))
  // Changes made to a volume's path after VOLUME are discarded: the ownership must be set before.
  assert.ok(chownAt !== -1 && chownAt < volumeAt, '/data is handed to node before it becomes a volume')
  assert.deepEqual(all(runtime, 'USER'), ['node'])
  const copied = all(runtime, 'COPY')
  assert.ok(copied.some((c) => c.endsWith('/app/packages/client/dist ./packages/client/dist')), 'the client package the bin imports is copied')
})

test('everything the build stage copies exists and is not excluded by .dockerignore', async () => {
  const build = (await stages())[0] as Stage
  const ignored = (await readFile('.dockerignore', 'utf8')).split('\n').map((l) => l.trim()).filter((l) => l !== '' && !l.startsWith('#'))
  for (const copy of all(build, 'COPY')) {
    const parts = copy.split(/\s+/).filter((p) => !p.startsWith('--'))
    for (const source of parts.slice(0, -1)) {
      assert.ok(existsSync(source), `COPY source ${source} exists`)
      assert.ok(!ignored.includes(source), `COPY source ${source} is not dockerignored`)
    }
  }
  for (const required of ['node_modules', '.git', 'dist']) assert.ok(ignored.includes(required), `${required} stays out of the build context`)
})

test('the HEALTHCHECK command exits 0 against a live gateway and 1 when nothing answers', async () => {
  const runtime = (await stages())[1] as Stage
  const [healthcheck] = all(runtime, 'HEALTHCHECK')
  assert.ok(healthcheck !== undefined)
  assert.match(healthcheck, /--interval=\d+s/)
  const [program, ...args] = execForm(healthcheck.slice(healthcheck.indexOf('CMD')))
  assert.equal(program, 'node')
  assert.match(args.join(' '), /\/healthz/)
  const g = await startGateway()
  const port = new URL(g.url).port
  try {
    const live = await run(process.execPath, args, { env: { ...process.env, TOLLGATE_PORT: port } })
    assert.equal(live.stderr, '')
  } finally {
    await g.close()
  }
  await assert.rejects(run(process.execPath, args, { env: { ...process.env, TOLLGATE_PORT: port } }), { code: 1 })
})
