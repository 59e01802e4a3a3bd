/**
 * The principal's sessions (with the turn each is running) and running turns, from
 * `GET /v1/sessions` and `GET /v1/turns?status=running`: how a reloaded page, or another
 * device, finds work it did not start here. Opening a turn follows it on this page.
 */
import { TollgateClientError, type TollgateClient } from '@tollgate/client'
import { el } from './dom.js'

export interface SessionsActions {
  openTurn (turnId: string): void
  continueSession (sessionId: string): void
}

function describe (err: unknown): string {
  return err instanceof TollgateClientError ? `${err.code}: ${err.message}` : String(err)
}

function when (iso: string): string {
  const t = Date.parse(iso)
  return Number.isNaN(t) ? iso : new Date(t).toLocaleString()
}

export class SessionsView {
  private refreshing = false

  constructor (
    private readonly client: TollgateClient,
    private readonly sessions: HTMLElement,
    private readonly turns: HTMLElement,
    private readonly status: HTMLElement,
    private readonly actions: SessionsActions
  ) {}

  async refresh (): Promise<void> {
    if (this.refreshing) return
    this.refreshing = true
    try {
      const [sessions, running] = await Promise.all([
        this.client.listSessions({ limit: 20 }),
        this.client.listTurns({ status: 'running', limit: 20 })
      ])
      this.status.textContent = `${sessions.items.length} session(s), ${running.items.length} running turn(s)`
      this.sessions.replaceChildren(...sessions.items.map((s) => el('li', { attrs: { 'data-session-id': s.session_id } }, [
        el('code', { text: s.session_id }),
        document.createTextNode(` ${s.agent} · updated ${when(s.updated_at)} `),
        ...(s.active_turn_id === null ? [] : [this.openButton(s.active_turn_id, 'Show its running turn')]),
        this.button('Continue this session', () => { this.actions.continueSession(s.session_id) })
      ])))
      this.turns.replaceChildren(...running.items.map((t) => el('li', { attrs: { 'data-turn-id': t.turn_id } }, [
        el('code', { text: t.turn_id }),
        document.createTextNode(` session ${t.session_id} · ${t.agent} · started ${when(t.created_at)} `),
        this.openButton(t.turn_id, 'Show')
      ])))
    } catch (err) {
      this.status.textContent = `could not list sessions and turns (${describe(err)})`
    } finally {
      this.refreshing = false
    }
  }

  private openButton (turnId: string, label: string): HTMLButtonElement {
    return this.button(label, () => { this.actions.openTurn(turnId) }, { 'data-open-turn': turnId })
  }

  private button (label: string, onClick: () => void, attrs: Record<string, string> = {}): HTMLButtonElement {
    const button = el('button', { text: label, attrs: { type: 'button', ...attrs } })
    button.addEventListener('click', onClick)
    return button
  }
}
