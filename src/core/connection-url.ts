/** Where a configured service (the store's PostgreSQL, the bus's Redis) is reached. */

/** A URL from the environment variable named by `url_env` when set, else the configured one. */
export function connectionUrl (section: { url: string, url_env?: string }, env: NodeJS.ProcessEnv, where: string): string {
  if (section.url_env === undefined) return section.url
  const value = env[section.url_env]
  if (value === undefined || value === '') throw new Error(`${where}.url_env names ${section.url_env}, which is not set`)
  return value
}
