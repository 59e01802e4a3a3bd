/** The version the ACP agent reports in `initialize`: Tollgate's own, from its package.json. */
import { readFileSync } from 'node:fs'

export function tollgateVersion (): string {
  // From source (src/acp/) or from the build (dist/src/acp/).
  for (const path of ['../../package.json', '../../../package.json']) {
    try {
      const pkg = JSON.parse(readFileSync(new URL(path, import.meta.url), 'utf8')) as { name?: string, version?: string }
      if (pkg.name === 'tollgate' && typeof pkg.version === 'string') return pkg.version
    } catch {}
  }
  return '0.0.0'
}
