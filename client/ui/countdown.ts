/**
 * Live countdowns to an approval's `expires_at`: each is an element carrying `data-expires-at`,
 * and one page-wide ticker rewrites them all every second (no timer per prompt to leak).
 */
import { timeLeft } from '@tollgate/client'
import { el } from './dom.js'

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
