#!/usr/bin/env node
// `npx tollgate chat`: runs the terminal client from source when tsx is installed (a development
// checkout, always current), otherwise the compiled copy from `npm run build` (dist/).
import { existsSync } from 'node:fs'
import { fileURLToPath } from 'node:url'

let register = null
try {
  ({ register } = await import('tsx/esm/api'))
} catch {}

if (register !== null) {
  // The checkout's tsconfig maps @tollgate/client to the package's source, from any working directory.
  register({ tsconfig: fileURLToPath(new URL('../tsconfig.json', import.meta.url)) })
  await import('../client/cli.ts')
} else if (existsSync(new URL('../dist/client/cli.js', import.meta.url))) {
  await import('../dist/client/cli.js')
} else {
  process.stderr.write('tollgate: the client is not built; run `npm run build` first\n')
  process.exitCode = 1
}
