/** Loopback addresses: the only binds where `auth.mode = "none"` is allowed. */
const LOOPBACK_HOSTS = new Set(['127.0.0.1', '::1', 'localhost', '::ffff:127.0.0.1'])

export function isLoopbackHost (host: string): boolean {
  return LOOPBACK_HOSTS.has(host) || host.startsWith('127.')
}
