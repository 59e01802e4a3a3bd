/**
 * One turn on the page: streamed text, a card per tool call (awaiting approval → running →
 * result), the approval prompt inside its card, a cancel button while the turn runs. The view
 * is driven only by the turn's events, so a resumed stream rebuilds exactly the same picture.
 */
import { resultText, TollgateClientError, type EventEnvelope, type OperatorDecision, type TollgateClient, type TurnEventOf } from '@tollgate/client'
import { el, showJson } from './dom.js'

interface Card {
  root: HTMLElement
  status: HTMLElement
  args: HTMLElement
  approval: HTMLElement | null
  output: HTMLElement
}

const DECISIONS: ReadonlyArray<{ decision: OperatorDecision, label: string, title: string }> = [
  { decision: 'yes', label: 'Yes', title: 'Run this call once' },
  { decision: 'no', label: 'No', title: 'Deny this call' },
  { decision: 'always', label: 'Always', title: 'Run it, and allow this tool for the rest of the session' },
  { decision: 'edit', label: 'Edit', title: 'Do not run it; give the model this text as its result instead' }
]

/** `always` on shell allows the exact command, not the tool. */
const ALWAYS_COMMAND_TITLE = 'Run it, and allow this exact command for the rest of the session'

/** The gateway escapes every invisible character as ‹U+XXXX› and marks line breaks with ⏎ (and escapes ‹ and ⏎ themselves). */
const ESCAPE = /‹U\+[0-9A-F]{4,6}›|⏎/g

/** One argument value, whole, with the gateway's escapes set apart so they cannot pass for text. */
function exactValue (value: string): HTMLElement {
  const pre = el('pre', { class: 'arg-value' })
  let last = 0
  for (const m of value.matchAll(ESCAPE)) {
    pre.append(value.slice(last, m.index), el('span', { class: 'escape', text: m[0] }))
    last = m.index + m[0].length
  }
  pre.append(value.slice(last))
  return pre
}

/** The arguments exactly as the tool will receive them: what the person deciding reads. */
function exactArguments (display: ReadonlyArray<{ name: string, value: string }>): HTMLElement {
  if (display.length === 0) return el('p', { class: 'card-args exact', text: '(no arguments)' })
  return el('dl', { class: 'card-args exact' }, display.flatMap((a) => [el('dt', { text: a.name }), el('dd', {}, [exactValue(a.value)])]))
}

export class TurnView {
  readonly root: HTMLElement
  private readonly body: HTMLElement
  private readonly statusBadge: HTMLElement
  private readonly cancelButton: HTMLButtonElement
  private readonly errorLine: HTMLElement
  private readonly cards = new Map<string, Card>()
  private text: HTMLElement | null = null

  constructor (private readonly client: TollgateClient, readonly turnId: string, message: string) {
    this.statusBadge = el('span', { class: 'turn-status', text: 'running' })
    this.cancelButton = el('button', { class: 'cancel', text: 'Cancel', attrs: { type: 'button' } })
    this.cancelButton.addEventListener('click', () => { this.cancel() })
    this.body = el('div', { class: 'turn-body' })
    this.errorLine = el('p', { class: 'turn-error', attrs: { hidden: '' } })
    this.root = el('article', { class: 'turn', attrs: { 'data-turn-id': turnId, 'data-status': 'running' } }, [
      el('header', { class: 'turn-head' }, [el('code', { class: 'turn-id', text: turnId }), this.statusBadge, this.cancelButton]),
      el('p', { class: 'user-message', text: message }),
      this.body,
      this.errorLine
    ])
  }

  apply (envelope: EventEnvelope): void {
    const e = envelope.event
    switch (e.kind) {
      case 'text.delta':
        this.appendText(e.text)
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
        this.finish('completed')
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

  private finish (status: string): void {
    this.root.dataset.status = status
    this.statusBadge.textContent = status
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
    const argsView = el('pre', { class: 'card-args', text: showJson(args) })
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
    const problem = el('p', { class: 'approval-error', attrs: { hidden: '' } })
    const replacement = el('textarea', { class: 'replacement', attrs: { rows: '3', maxlength: '65536', 'aria-label': 'Replacement result' } })
    const submitEdit = el('button', { class: 'submit-edit', text: 'Send edited result', attrs: { type: 'button' } })
    const editor = el('div', { class: 'editor', attrs: { hidden: '' } }, [replacement, submitEdit])
    const buttons = DECISIONS.map(({ decision, label, title }) => el('button', {
      text: label,
      attrs: {
        type: 'button',
        'data-decision': decision,
        title: decision === 'always' && e.name === 'shell' ? ALWAYS_COMMAND_TITLE : title
      }
    }))
    const all = [...buttons, submitEdit]
    const answer = (decision: OperatorDecision, text?: string): void => {
      for (const b of all) b.disabled = true
      problem.hidden = true
      this.client.respond(e.request_id, decision, text).catch((err: unknown) => {
        problem.hidden = false
        problem.textContent = err instanceof TollgateClientError ? `${err.code}: ${err.message}` : String(err)
        if (!(err instanceof TollgateClientError && err.code === 'APPROVAL_ALREADY_RESOLVED')) for (const b of all) b.disabled = false
      })
    }
    for (const button of buttons) {
      const decision = button.dataset.decision as OperatorDecision
      button.addEventListener('click', () => {
        if (decision !== 'edit') {
          answer(decision)
          return
        }
        editor.hidden = false
        replacement.focus()
      })
    }
    submitEdit.addEventListener('click', () => { answer('edit', replacement.value) })
    const approval = el('div', { class: 'approval', attrs: { 'data-request-id': e.request_id } }, [
      el('p', { class: 'approval-question', text: `Allow ${e.name}? It runs with exactly the arguments shown above.` }),
      el('div', { class: 'approval-buttons' }, buttons),
      editor,
      problem
    ])
    card.approval?.remove()
    card.approval = approval
    card.root.append(approval)
  }

  private resolved (e: TurnEventOf<'approval.resolved'>): void {
    const card = this.cards.get(e.call_id)
    if (card === undefined) return
    card.approval?.remove()
    card.approval = null
    card.root.append(el('p', { class: 'approval-decision', text: `${e.decision} (${e.decided_by})` }))
    this.setStatus(card, 'approval-resolved', e.decision === 'yes' || e.decision === 'always' ? 'approved' : e.decision)
  }

  private toolCall (e: TurnEventOf<'tool_call'>): void {
    this.setStatus(this.card(e.call_id, e.name, e.arguments), 'running')
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
