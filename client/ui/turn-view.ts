/**
 * One turn on the page: streamed text, a card per tool call (awaiting approval → running →
 * result), the approval prompt inside its card, a cancel button while the turn runs. The view
 * is driven only by the turn's events, so a resumed stream rebuilds exactly the same picture.
 */
import { resultText, TollgateClientError, type EventEnvelope, type TollgateClient, type TurnEventOf } from '@tollgate/client'
import { approvalPrompt } from './approval-prompt.js'
import { callArguments, exactArguments } from './arguments.js'
import { el } from './dom.js'
import { decisionInWords } from './words.js'

interface Card {
  root: HTMLElement
  status: HTMLElement
  args: HTMLElement
  approval: HTMLElement | null
  output: HTMLElement
}

/** Called when a prompt is on the page, so the page can announce it and move focus to it. */
export type PromptShown = (requestId: string, prompt: HTMLElement, text: string) => void

export class TurnView {
  readonly root: HTMLElement
  private readonly body: HTMLElement
  private readonly statusBadge: HTMLElement
  private readonly cancelButton: HTMLButtonElement
  private readonly errorLine: HTMLElement
  private readonly cards = new Map<string, Card>()
  private text: HTMLElement | null = null
  /** The open reasoning block: collapsed (`<details>`), its text inside. */
  private reasoning: HTMLElement | null = null

  /** `message` is null when the page did not keep it (a turn found in the lists after a reload). */
  constructor (
    private readonly client: TollgateClient,
    readonly turnId: string,
    message: string | null,
    private readonly promptShown: PromptShown
  ) {
    this.statusBadge = el('span', { class: 'turn-status', text: 'running' })
    this.cancelButton = el('button', { class: 'cancel', text: 'Cancel', attrs: { type: 'button' } })
    this.cancelButton.addEventListener('click', () => { this.cancel() })
    this.body = el('div', { class: 'turn-body' })
    this.errorLine = el('p', { class: 'turn-error', attrs: { hidden: '' } })
    this.root = el('article', { class: 'turn', attrs: { 'data-turn-id': turnId, 'data-status': 'running' } }, [
      el('header', { class: 'turn-head' }, [el('code', { class: 'turn-id', text: turnId }), this.statusBadge, this.cancelButton]),
      message === null
        ? el('p', { class: 'user-message unknown', text: '(message not kept by this tab)' })
        : el('p', { class: 'user-message', text: message }),
      this.body,
      this.errorLine
    ])
  }

  apply (envelope: EventEnvelope): void {
    const e = envelope.event
    switch (e.kind) {
      case 'text.delta':
        this.reasoning = null
        this.appendText(e.text)
        return
      case 'model.fallback':
        this.body.append(el('p', { class: 'turn-note', text: `${e.from} failed (${e.code}); trying ${e.to}` }))
        this.text = null
        return
      case 'reasoning.delta':
        this.appendReasoning(e.text)
        return
      case 'approval.requested':
        this.askApproval(e)
        return
      case 'approval.resolved':
        this.resolved(e)
        return
      case 'tool_call':
        this.toolCall(e)
        return
      case 'tool.progress':
        this.toolProgress(e)
        return
      case 'tool_result':
        this.toolResult(e)
        return
      case 'turn.completed':
        this.showFinal(e.final_text)
        this.finish('completed', this.outcome())
        return
      case 'turn.cancelled':
        this.body.append(el('p', { class: 'turn-end', text: `Cancelled: ${e.reason}` }))
        this.finish('cancelled')
        return
      case 'turn.failed':
        this.body.append(el('p', { class: 'turn-end', text: `Failed (${e.code}): ${e.message}` }))
        this.finish('failed')
        return
      case 'iteration':
        // Each model round writes its narration in a paragraph of its own.
        this.text = null
        this.reasoning = null
        return
      case 'turn.resumed':
        // The gateway restarted mid-turn; a model call it cut off is made again, in a paragraph of its own.
        this.body.append(el('p', { class: 'turn-resumed', text: 'Resumed after a gateway restart' }))
        this.text = null
        return
      case 'user.message':
        // A steering message: shown where it was sent; the model reads it at its next call.
        this.body.append(el('p', { class: 'turn-steer', text: `You: ${e.message}` }))
        this.text = null
        return
      case 'turn.started':
        return
    }
  }

  /** The stream ended without a terminal event (could not resume, client closed). */
  fail (error: unknown): void {
    this.errorLine.hidden = false
    this.errorLine.textContent = error instanceof TollgateClientError ? `${error.code}: ${error.message}` : String(error)
  }

  /**
   * What happened, beyond "completed": a turn whose calls were denied or failed completed, but
   * not as asked ("completed — 2 calls denied"), and is not shown in the success colour.
   */
  private outcome (): string | null {
    const counts = new Map<string, number>()
    for (const card of this.cards.values()) {
      const status = card.root.dataset.status ?? ''
      if (['denied', 'error', 'cancelled', 'interrupted'].includes(status)) counts.set(status, (counts.get(status) ?? 0) + 1)
    }
    if (counts.size === 0) return null
    const words: Record<string, string> = { denied: 'denied', error: 'failed', cancelled: 'cancelled', interrupted: 'interrupted' }
    return [...counts].map(([status, n]) => `${n} ${n === 1 ? 'call' : 'calls'} ${words[status] ?? status}`).join(', ')
  }

  private finish (status: string, outcome: string | null = null): void {
    this.root.dataset.status = status
    if (outcome !== null) this.root.dataset.outcome = 'partial'
    this.statusBadge.textContent = outcome === null ? status : `${status} — ${outcome}`
    this.cancelButton.hidden = true
    for (const card of this.cards.values()) card.approval?.remove()
  }

  /** The final answer was usually streamed already as the last narration: mark it rather than repeat it. */
  private showFinal (finalText: string): void {
    if (this.text !== null && this.text.textContent === finalText) {
      this.text.classList.add('final-text')
      return
    }
    this.body.append(el('p', { class: 'final-text', text: finalText }))
  }

  private cancel (): void {
    this.cancelButton.disabled = true
    this.client.cancel(this.turnId).catch((err: unknown) => {
      this.cancelButton.disabled = false
      this.fail(err)
    })
  }

  private appendReasoning (text: string): void {
    if (this.reasoning === null) {
      this.reasoning = el('p', { class: 'reasoning-text' })
      this.body.append(el('details', { class: 'reasoning' }, [el('summary', { text: 'Reasoning' }), this.reasoning]))
      this.text = null
    }
    this.reasoning.textContent = `${this.reasoning.textContent ?? ''}${text}`
  }

  private appendText (text: string): void {
    if (this.text === null) {
      this.text = el('p', { class: 'assistant-text' })
      this.body.append(this.text)
    }
    this.text.textContent = `${this.text.textContent ?? ''}${text}`
  }

  private card (callId: string, name: string, args: Record<string, unknown>): Card {
    const existing = this.cards.get(callId)
    if (existing !== undefined) return existing
    const status = el('span', { class: 'card-status' })
    const output = el('pre', { class: 'card-output', attrs: { hidden: '' } })
    const argsView = callArguments(name, args)
    const root = el('section', { class: 'card', attrs: { 'data-call-id': callId, 'data-tool': name } }, [
      el('div', { class: 'card-head' }, [el('span', { class: 'tool-name', text: name }), status]),
      argsView,
      output
    ])
    const card: Card = { root, status, args: argsView, approval: null, output }
    this.cards.set(callId, card)
    this.text = null
    this.body.append(root)
    return card
  }

  private setStatus (card: Card, status: string, label = status): void {
    card.root.dataset.status = status
    card.status.textContent = label
  }

  private askApproval (e: TurnEventOf<'approval.requested'>): void {
    const card = this.card(e.call_id, e.name, e.arguments)
    this.setStatus(card, 'awaiting-approval', 'awaiting approval')
    // The scrubbed arguments could hide part of a command behind a mask: the card shows the exact form.
    const exact = exactArguments(e.display)
    card.args.replaceWith(exact)
    card.args = exact
    const approval = approvalPrompt({
      requestId: e.request_id,
      tool: e.name,
      display: e.display,
      risk: e.risk,
      reason: e.reason,
      expiresAt: e.expires_at,
      showArguments: false
    }, async (decision, text) => await this.client.respond(e.request_id, decision, text))
    card.approval?.remove()
    card.approval = approval
    card.root.append(approval)
    this.promptShown(e.request_id, approval, `Approval needed: ${e.name} in turn ${this.turnId}`)
  }

  private resolved (e: TurnEventOf<'approval.resolved'>): void {
    const card = this.cards.get(e.call_id)
    if (card === undefined) return
    card.approval?.remove()
    card.approval = null
    card.root.append(el('p', { class: 'approval-decision', text: decisionInWords(e.decision, e.decided_by) }))
    this.setStatus(card, 'approval-resolved', e.decision === 'yes' || e.decision === 'always' ? 'approved' : e.decision)
  }

  /**
   * Cards stand in the order their calls ran: a card made early for an approval request moves
   * after the cards of the calls that ran before it (every call gets its tool_call event when it
   * runs, or just before the result of a call that never runs).
   */
  private toolCall (e: TurnEventOf<'tool_call'>): void {
    const card = this.card(e.call_id, e.name, e.arguments)
    // Text never follows a call of its own round (the model wrote it before asking), so the end is the place.
    if (card.root !== this.body.lastElementChild) this.body.append(card.root)
    this.setStatus(card, 'running')
  }

  /** The latest progress of a running call; its result replaces it. */
  private toolProgress (e: TurnEventOf<'tool.progress'>): void {
    const card = this.cards.get(e.call_id)
    if (card === undefined) return
    const count = e.progress === undefined ? '' : ` · ${e.progress}${e.total === undefined ? '' : `/${e.total}`}`
    this.setStatus(card, 'running', `running${count}`)
    if (e.message === undefined) return
    card.output.hidden = false
    card.output.textContent = e.message
  }

  private toolResult (e: TurnEventOf<'tool_result'>): void {
    const card = this.card(e.call_id, e.name, {})
    this.setStatus(card, e.status, `${e.status} · ${e.duration_ms} ms${e.truncated === true ? ' · truncated' : ''}`)
    card.output.hidden = false
    card.output.textContent = resultText(e.output, e.error)
  }
}
