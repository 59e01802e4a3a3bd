/**
 * TypeBox schemas → plain JSON Schema for the API documents: TypeBox's symbol markers dropped,
 * and every titled schema hoisted once into components.schemas and referenced by $ref.
 */
export type JsonObject = Record<string, unknown>

export function plainSchema (schema: unknown): JsonObject {
  return JSON.parse(JSON.stringify(schema)) as JsonObject
}

export class SchemaComponents {
  private readonly schemas = new Map<string, { json: string, schema: JsonObject }>()

  constructor (private readonly refPrefix: string) {}

  /** A plain copy of `schema` with titled sub-schemas replaced by $refs into the components. */
  use (schema: unknown): JsonObject {
    return this.hoist(plainSchema(schema)) as JsonObject
  }

  entries (): JsonObject {
    const out: JsonObject = {}
    for (const name of [...this.schemas.keys()].sort()) out[name] = this.schemas.get(name)?.schema
    return out
  }

  private hoist (node: unknown): unknown {
    if (Array.isArray(node)) return node.map((n) => this.hoist(n))
    if (typeof node !== 'object' || node === null) return node
    const copy: JsonObject = {}
    for (const [key, value] of Object.entries(node)) copy[key] = this.hoist(value)
    const title = copy.title
    if (typeof title !== 'string') return copy
    const json = JSON.stringify(copy)
    const seen = this.schemas.get(title)
    if (seen !== undefined && seen.json !== json) throw new Error(`two different schemas are both titled ${title}`)
    this.schemas.set(title, { json, schema: copy })
    return { $ref: `${this.refPrefix}${title}` }
  }
}
