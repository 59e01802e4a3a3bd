/**
 * The exact arguments of an approval request as the person deciding reads them: every value
 * whole, with the gateway's escapes set apart so they cannot pass for text.
 */
import { modelArguments } from '@tollgate/client'
import { el, showJson } from './dom.js'

/** The gateway escapes every invisible character as ‹U+XXXX› and marks line breaks with ⏎ (and escapes ‹ and ⏎ themselves). */
const ESCAPE = /‹U\+[0-9A-F]{4,6}›|⏎/g

/** One argument value, whole, with the gateway's escapes set apart. */
export function exactValue (value: string): HTMLElement {
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
export function exactArguments (display: ReadonlyArray<{ name: string, value: string }>): HTMLElement {
  if (display.length === 0) return el('p', { class: 'card-args exact', text: '(no arguments)' })
  return el('dl', { class: 'card-args exact' }, display.flatMap((a) => [el('dt', { text: a.name }), el('dd', {}, [exactValue(a.value)])]))
}

/** A call's structured arguments for its card, without the runtime's internal `approved` marker. */
export function callArguments (tool: string, args: Record<string, unknown>): HTMLElement {
  return el('pre', { class: 'card-args', text: showJson(modelArguments(tool, args)) })
}
