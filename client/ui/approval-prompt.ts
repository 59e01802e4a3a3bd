/**
 * The approval prompt a person can trust: which tool, its exact arguments, why it needs an
 * answer (the policy rule that asked), the risk level, the time left, and in plain visible text
 * what each answer does — `Always` above all, which grants more than this one call (for `shell`
 * the exact command, shown). Used inside a turn's card and in the approval inbox alike.
 */
import { TollgateClientError, type OperatorDecision } from '@tollgate/client'
import { exactArguments, exactValue } from './arguments.js'
import { countdown } from './countdown.js'
import { whyInWords } from './words.js'
import { el } from './dom.js'

export interface PromptInput {
  requestId: string
  tool: string
  display: ReadonlyArray<{ name: string, value: string }>
  risk?: string | undefined
  reason?: string | undefined
  expiresAt: string
  /** Whether the prompt shows the arguments itself (the inbox) or its card already does (a turn). */
  showArguments: boolean
}

export type AnswerFn = (decision: OperatorDecision, replacement?: string) => Promise<unknown>

const DECISIONS: ReadonlyArray<{ decision: OperatorDecision, label: string }> = [
  { decision: 'yes', label: 'Yes' },
  { decision: 'no', label: 'No' },
  { decision: 'always', label: 'Always' },
  { decision: 'edit', label: 'Edit' }
]

/** What `Always` grants, in words (and for shell the exact command it will allow). */
function alwaysGrant (input: PromptInput): HTMLElement {
  const lead = el('strong', { text: 'Always' })
  if (input.tool === 'shell') {
    const command = input.display.find((a) => a.name === 'command')?.value ?? ''
    return el('div', { class: 'always-grant', attrs: { 'data-grant': 'command' } }, [
      el('p', {}, [lead, document.createTextNode(' runs it now and, for the rest of this session, runs exactly this command again ' +
        'without asking (any other command is still asked about):')]),
      exactValue(command)
    ])
  }
  return el('div', { class: 'always-grant', attrs: { 'data-grant': 'tool' } }, [
    el('p', {}, [lead, document.createTextNode(` runs it now and, for the rest of this session, runs every ${input.tool} call ` +
      'without asking, whatever its arguments.')])
  ])
}

function fact (name: string, value: Node, key: string): Node[] {
  return [el('dt', { text: name }), el('dd', { attrs: { 'data-fact': key } }, [value])]
}

export function approvalPrompt (input: PromptInput, answer: AnswerFn): HTMLElement {
  const problem = el('p', { class: 'approval-error', attrs: { hidden: '', role: 'alert' } })
  const replacement = el('textarea', { class: 'replacement', attrs: { rows: '3', maxlength: '65536', 'aria-label': 'Replacement result' } })
  const submitEdit = el('button', { class: 'submit-edit', text: 'Send edited result', attrs: { type: 'button' } })
  const editor = el('div', { class: 'editor', attrs: { hidden: '' } }, [replacement, submitEdit])
  const buttons = DECISIONS.map(({ decision, label }) =>
    el('button', { text: label, attrs: { type: 'button', 'data-decision': decision } }))
  const all = [...buttons, submitEdit]
  const send = (decision: OperatorDecision, text?: string): void => {
    for (const b of all) b.disabled = true
    problem.hidden = true
    answer(decision, text).catch((err: unknown) => {
      problem.hidden = false
      problem.textContent = err instanceof TollgateClientError ? `${err.code}: ${err.message}` : String(err)
      if (!(err instanceof TollgateClientError && err.code === 'APPROVAL_ALREADY_RESOLVED')) for (const b of all) b.disabled = false
    })
  }
  for (const button of buttons) {
    const decision = button.dataset.decision as OperatorDecision
    button.addEventListener('click', () => {
      if (decision !== 'edit') {
        send(decision)
        return
      }
      editor.hidden = false
      replacement.focus()
    })
  }
  submitEdit.addEventListener('click', () => { send('edit', replacement.value) })

  const risk = input.risk ?? 'not stated'
  const where = input.showArguments ? 'below' : 'above'
  return el('div', {
    class: 'approval',
    attrs: {
      'data-request-id': input.requestId,
      'data-risk': risk,
      role: 'group',
      tabindex: '-1',
      'aria-label': `Approval request: allow ${input.tool}?`
    }
  }, [
    el('p', { class: 'approval-question', text: `Allow ${input.tool}? It runs with exactly the arguments shown ${where}.` }),
    ...(input.showArguments ? [exactArguments(input.display)] : []),
    el('dl', { class: 'approval-facts' }, [
      ...fact('Why', whyInWords(input.reason), 'reason'),
      ...fact('Risk', el('span', { class: 'risk', text: risk, attrs: { 'data-risk': risk } }), 'risk'),
      ...fact('Time left', countdown(input.expiresAt), 'expires')
    ]),
    el('ul', { class: 'answer-meanings' }, [
      el('li', {}, [el('strong', { text: 'Yes' }), document.createTextNode(' runs this one call.')]),
      el('li', {}, [el('strong', { text: 'No' }), document.createTextNode(' does not run it; the model is told you denied it.')]),
      el('li', {}, [alwaysGrant(input)]),
      el('li', {}, [el('strong', { text: 'Edit' }), document.createTextNode(' does not run it; the text you write becomes its result.')])
    ]),
    el('div', { class: 'approval-buttons' }, buttons),
    editor,
    problem
  ])
}
