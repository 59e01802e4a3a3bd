/** The words of an approval countdown (DOM-free, so it is unit-tested in Node). */

/** "expires in 1:05", "expires in 2 h 03 min", or "expired" once the time has passed. */
export function timeLeft (expiresAt: string, now: number): { text: string, expired: boolean } {
  const ms = Date.parse(expiresAt) - now
  if (Number.isNaN(ms)) return { text: 'expiry unknown', expired: false }
  if (ms <= 0) return { text: 'expired', expired: true }
  const seconds = Math.ceil(ms / 1000)
  if (seconds >= 3600) {
    const minutes = Math.floor((seconds % 3600) / 60)
    return { text: `expires in ${Math.floor(seconds / 3600)} h ${String(minutes).padStart(2, '0')} min`, expired: false }
  }
  return { text: `expires in ${Math.floor(seconds / 60)}:${String(seconds % 60).padStart(2, '0')}`, expired: false }
}
