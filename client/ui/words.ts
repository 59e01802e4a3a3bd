/**
 * Plain words for what the gateway states in policy terms: why a call is asked about, and who
 * settled an approval and where. The exact policy text stays available, folded, for those who
 * want it; `decided_by` is the gateway's audit form, `<surface>:<tenant>/<sub>` (`ws:acme/alice`, `rest:…`).
 */
import { el } from './dom.js'

/** Why a call waits for a person, in words, with the policy's own sentence folded beneath. */
export function whyInWords (reason: string | undefined): HTMLElement {
  if (reason === undefined) return el('span', { text: 'The gateway did not say which rule asked.' })
  const plain = /always_ask/.test(reason)
    ? 'This tool is set to ask a person every time.'
    : 'This tool needs a person\'s yes before it runs.'
  return el('span', { class: 'why' }, [
    document.createTextNode(plain),
    el('details', { class: 'policy-detail' }, [el('summary', { text: 'Policy detail' }), el('p', { text: reason })])
  ])
}

const SURFACES: Record<string, string> = {
  ws: 'over a live connection (this page or a terminal)',
  rest: 'over REST (an inbox or an app)',
  'ag-ui': 'in an AG-UI app',
  'ai-sdk': 'in an AI SDK chat',
  acp: 'in an editor (ACP)'
}

/** "yes" by whom and where, as a person reads it. */
export function decisionInWords (decision: string, decidedBy: string): string {
  if (decidedBy === 'runtime') {
    const why: Record<string, string> = {
      expired: 'nobody answered in time, so it was denied',
      'auto-deny': 'nobody who could answer was watching, so it was denied',
      cancelled: 'the turn was cancelled while it waited'
    }
    return `Settled by the gateway: ${why[decision] ?? decision}`
  }
  const colon = decidedBy.indexOf(':')
  const surface = colon === -1 ? decidedBy : decidedBy.slice(0, colon)
  const who = colon === -1 ? '' : decidedBy.slice(colon + 1)
  const answered: Record<string, string> = { yes: 'Approved', always: 'Approved for the session', no: 'Denied', edit: 'Replaced with your text' }
  const person = who === '' ? '' : ` by ${who}`
  return `${answered[decision] ?? decision}${person} ${SURFACES[surface] ?? `via ${surface}`}`
}
