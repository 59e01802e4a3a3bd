/**
 * Live countdowns to an approval's `expires_at`: each is an element carrying `data-expires-at`,
 * and one page-wide ticker rewrites them all every second (no timer per prompt to leak).
 */
import { el } from './dom.js'

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

function render (node: HTMLElement, now: number): void {
  const { text, expired } = timeLeft(node.dataset.expiresAt ?? '', now)
  if (node.textContent !== text) node.textContent = text
  if (expired) node.dataset.expired = 'true'
}

/** A countdown element, already showing the time left. */
export function countdown (expiresAt: string): HTMLElement {
  const node = el('span', { class: 'countdown', attrs: { 'data-expires-at': expiresAt } })
  render(node, Date.now())
  return node
}

/** Starts the page's ticker over every countdown under `root`; returns its stop function. */
export function startCountdowns (root: HTMLElement): () => void {
  const timer = setInterval(() => {
    const now = Date.now()
    for (const node of root.querySelectorAll<HTMLElement>('[data-expires-at]')) render(node, now)
  }, 1000)
  return () => { clearInterval(timer) }
}
