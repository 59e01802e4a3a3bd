/**
 * Every risk profile's permission rules, compiled once at gateway start: a rule that names an
 * unknown tool or has a malformed specifier stops the start with a ConfigError. The shell parser
 * is loaded only when some profile has rules.
 */
import type { Config } from '../../schemas/config.js'
import { ConfigError } from '../core/config.js'
import { RuleError, type KnownTools } from './permission-rules.js'
import { compileProfilePermissions, type ProfilePermissions } from './permissions.js'
import { loadShellSyntax, type ShellSyntax } from './shell-parser.js'

export interface PermissionBook {
  /** The compiled rules of a risk profile; null when it has none. */
  forProfile: (profile: string) => ProfilePermissions | null
  close: () => void
}

export async function loadPermissionBook (config: Config, known: KnownTools): Promise<PermissionBook> {
  const profiles = Object.entries(config.risk_profiles)
  const used = profiles.some(([, p]) => p.permissions.allow.length + p.permissions.ask.length + p.permissions.deny.length > 0 || p.permissions_mode === 'shadow')
  if (!used) return { forProfile: () => null, close: () => {} }
  const syntax: ShellSyntax = await loadShellSyntax()
  const compiled = new Map<string, ProfilePermissions>()
  try {
    for (const [name, profile] of profiles) {
      try {
        const permissions = compileProfilePermissions({ ...profile.permissions, mode: profile.permissions_mode }, known, syntax)
        if (permissions !== null) compiled.set(name, permissions)
      } catch (err) {
        if (err instanceof RuleError) throw new ConfigError(`invalid configuration: risk_profiles.${name}.permissions: ${err.message}`)
        throw err
      }
    }
  } catch (err) {
    syntax.close()
    throw err
  }
  return { forProfile: (profile) => compiled.get(profile) ?? null, close: () => { syntax.close() } }
}
