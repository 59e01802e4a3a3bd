/**
 * The only way the page creates DOM: elements with textContent and attributes. Model and tool
 * text never passes through innerHTML, so it can never become markup or script.
 */
export interface ElementProps {
  class?: string
  text?: string
  attrs?: Record<string, string>
}

export function el<K extends keyof HTMLElementTagNameMap> (
  tag: K, props: ElementProps = {}, children: Node[] = []
): HTMLElementTagNameMap[K] {
  const node = document.createElement(tag)
  if (props.class !== undefined) node.className = props.class
  if (props.text !== undefined) node.textContent = props.text
  for (const [name, value] of Object.entries(props.attrs ?? {})) node.setAttribute(name, value)
  for (const child of children) node.append(child)
  return node
}

export function byId<T extends HTMLElement> (id: string): T {
  const node = document.getElementById(id)
  if (node === null) throw new Error(`the page has no #${id}`)
  return node as T
}

/** Pretty JSON for display; anything unserializable is shown as its string form. */
export function showJson (value: unknown): string {
  try {
    return JSON.stringify(value, null, 2) ?? String(value)
  } catch {
    return String(value)
  }
}
