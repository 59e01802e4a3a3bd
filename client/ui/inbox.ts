/**
 * The approval inbox: every approval request of this principal still waiting for an answer,
 * across turns and sessions (`GET /v1/approvals?status=pending`), newest first, each with its
 * full prompt and a live countdown, answered over REST so no subscription is needed. A request
 * whose turn this page already shows has its one prompt in that turn's card: the inbox lists it
 * with a button that takes focus there, never a second copy. It is refreshed when a followed
 * turn asks or settles something, and polled while the tab is visible.
 */
import { TollgateClientError, type PendingApproval, type TollgateClient } from '@tollgate/client'
import { approvalPrompt } from './approval-prompt.js'
import { el } from './dom.js'
import type { PromptShown } from './turn-view.js'

const POLL_MS = 5000
/** Pages fetched per refresh at most (50 each): a person cannot work through more at once. */
const MAX_PAGES = 4

function describe (err: unknown): string {
  return err instanceof TollgateClientError ? `${err.code}: ${err.message}` : String(err)
}

/** Whether the page shows this turn (its card then holds the request's prompt). */
export type TurnShown = (turnId: string) => boolean

interface Item {
  root: HTMLElement
  /** true: the prompt lives in the turn's card and this item only points to it. */
  linked: boolean
}

export class Inbox {
  private readonly items = new Map<string, Item>()
  private timer: ReturnType<typeof setInterval> | null = null
  private refreshing: Promise<void> | null = null
  private again = false

  constructor (
    private readonly client: TollgateClient,
    private readonly list: HTMLElement,
    private readonly status: HTMLElement,
    private readonly openTurn: (turnId: string) => void,
    private readonly promptShown: PromptShown,
    private readonly turnShown: TurnShown
  ) {}

  start (): void {
    this.timer = setInterval(() => { if (document.visibilityState === 'visible') void this.refresh() }, POLL_MS)
    void this.refresh()
  }

  stop (): void {
    if (this.timer !== null) clearInterval(this.timer)
    this.timer = null
  }

  /** Fetches the pending list; a refresh asked for while one runs runs once more after it. */
  async refresh (): Promise<void> {
    if (this.refreshing !== null) {
      this.again = true
      return await this.refreshing
    }
    this.refreshing = this.load().finally(() => { this.refreshing = null })
    await this.refreshing
    if (this.again) {
      this.again = false
      await this.refresh()
    }
  }

  private async load (): Promise<void> {
    let pending: PendingApproval[] = []
    let more = false
    try {
      let cursor: string | undefined
      for (let page = 0; page < MAX_PAGES; page++) {
        const answer = await this.client.listPendingApprovals({ limit: 50, ...(cursor === undefined ? {} : { cursor }) })
        pending = pending.concat(answer.items)
        if (answer.next_cursor === null) break
        cursor = answer.next_cursor
        more = page === MAX_PAGES - 1
      }
    } catch (err) {
      this.status.textContent = `could not list pending approvals (${describe(err)})`
      // A gateway without the route will not grow it: stop asking every few seconds (Refresh still asks).
      if (err instanceof TollgateClientError && err.status === 404) this.stop()
      return
    }
    this.status.textContent = pending.length === 0
      ? 'nothing is waiting for your answer'
      : `${pending.length}${more ? '+' : ''} approval request(s) waiting for your answer`
    const wanted = new Map(pending.map((p) => [p.request_id, this.turnShown(p.turn_id)]))
    for (const [id, item] of this.items) {
      // Gone, or its turn appeared on the page (or left it): rebuilt in the right form below.
      if (wanted.get(id) !== item.linked) {
        item.root.remove()
        this.items.delete(id)
      }
    }
    const fresh: Array<{ p: PendingApproval, prompt: HTMLElement }> = []
    const ordered = pending.map((p) => {
      const existing = this.items.get(p.request_id)
      if (existing !== undefined) return existing.root
      if (wanted.get(p.request_id) === true) {
        const root = this.renderLink(p)
        this.items.set(p.request_id, { root, linked: true })
        return root
      }
      const { item, prompt } = this.render(p)
      this.items.set(p.request_id, { root: item, linked: false })
      fresh.push({ p, prompt })
      return item
    })
    // Newest first, as listed; existing items move without being rebuilt (a half-written edit survives).
    ordered.forEach((item, index) => {
      const here = this.list.children[index] ?? null
      if (here !== item) this.list.insertBefore(item, here)
    })
    for (const { p, prompt } of fresh) this.promptShown(p.request_id, prompt, `Approval needed: ${p.tool} in turn ${p.turn_id}`)
  }

  /** A request whose prompt is in its turn's card on this page: a pointer to it, not a copy. */
  private renderLink (p: PendingApproval): HTMLElement {
    const go = el('button', { text: 'Answer it in its turn', attrs: { type: 'button', 'data-go-to-prompt': p.request_id } })
    go.addEventListener('click', () => {
      const prompt = document.querySelector<HTMLElement>(`#turns .approval[data-request-id="${CSS.escape(p.request_id)}"]`)
      if (prompt === null) {
        this.openTurn(p.turn_id)
        return
      }
      prompt.scrollIntoView({ block: 'center' })
      prompt.focus()
    })
    return el('li', { class: 'inbox-item linked', attrs: { 'data-request-id': p.request_id, 'data-turn-id': p.turn_id } }, [
      el('div', { class: 'inbox-head' }, [
        el('span', { class: 'tool-name', text: p.tool }),
        el('span', { text: 'waits in its turn below' }),
        go
      ])
    ])
  }

  private render (p: PendingApproval): { item: HTMLElement, prompt: HTMLElement } {
    const prompt = approvalPrompt({
      requestId: p.request_id,
      tool: p.tool,
      display: p.display,
      risk: p.risk,
      reason: p.reason,
      expiresAt: p.expires_at,
      showArguments: true
    }, async (decision, text) => {
      await this.client.answerApproval(p.request_id, decision, text)
      void this.refresh()
    })
    const open = el('button', { text: 'Show the turn', attrs: { type: 'button', 'data-open-turn': p.turn_id } })
    open.addEventListener('click', () => { this.openTurn(p.turn_id) })
    const item = el('li', { class: 'inbox-item', attrs: { 'data-request-id': p.request_id, 'data-turn-id': p.turn_id } }, [
      el('div', { class: 'inbox-head' }, [
        el('span', { class: 'tool-name', text: p.tool }),
        el('code', { class: 'turn-id', text: p.turn_id }),
        open
      ]),
      prompt
    ])
    return { item, prompt }
  }
}
