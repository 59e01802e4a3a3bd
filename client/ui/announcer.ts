/**
 * Tells a person that a new approval prompt is waiting: the text goes to the page's aria-live
 * region (read out by screen readers) and focus moves to the prompt itself — to the prompt, not
 * to one of its buttons, so an Enter or space meant for something else cannot answer it.
 * Each request is announced once, whichever view (its turn, the inbox) shows it first.
 */
export class PromptAnnouncer {
  private readonly announced = new Set<string>()

  constructor (private readonly region: HTMLElement) {}

  /** Announces a prompt that is on the page; false if this request was announced already. */
  announce (requestId: string, prompt: HTMLElement, text: string): boolean {
    if (this.announced.has(requestId) || !prompt.isConnected) return false
    this.announced.add(requestId)
    // Cleared first so the same words for a second prompt are still read out.
    this.region.textContent = ''
    this.region.textContent = text
    prompt.focus()
    return true
  }
}
