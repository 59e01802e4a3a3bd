/**
 * The module graph of src/ and routes/ has no import cycle, type-only imports included: a cycle is
 * how a layer starts depending on the layer above it. Walks every import/export declaration with
 * the TypeScript compiler's parser (so `import type` and `export … from` count) and reports each
 * strongly connected component.
 */
import assert from 'node:assert/strict'
import { readdirSync, readFileSync } from 'node:fs'
import { dirname, join, relative, resolve } from 'node:path'
import { test } from 'node:test'
import { fileURLToPath } from 'node:url'
import ts from 'typescript'

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..')

function sourceFiles (dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name)
    if (entry.isDirectory()) return sourceFiles(path)
    return entry.name.endsWith('.ts') ? [path] : []
  })
}

function importsOf (file: string): string[] {
  const source = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.Latest, false)
  const specifiers: string[] = []
  const visit = (node: ts.Node): void => {
    if ((ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) && node.moduleSpecifier !== undefined &&
      ts.isStringLiteral(node.moduleSpecifier)) {
      specifiers.push(node.moduleSpecifier.text)
    } else if (ts.isImportTypeNode(node) && ts.isLiteralTypeNode(node.argument) && ts.isStringLiteral(node.argument.literal)) {
      specifiers.push(node.argument.literal.text)
    } else if (ts.isCallExpression(node) && node.expression.kind === ts.SyntaxKind.ImportKeyword) {
      const [arg] = node.arguments
      if (arg !== undefined && ts.isStringLiteral(arg)) specifiers.push(arg.text)
    }
    ts.forEachChild(node, visit)
  }
  visit(source)
  return specifiers.filter((s) => s.startsWith('.')).map((s) => resolve(dirname(file), s).replace(/\.js$/, '.ts'))
}

/** Tarjan's strongly connected components; every component with more than one file is a cycle. */
function cycles (graph: Map<string, string[]>): string[][] {
  let index = 0
  const order = new Map<string, number>()
  const low = new Map<string, number>()
  const stack: string[] = []
  const onStack = new Set<string>()
  const found: string[][] = []
  const connect = (node: string): void => {
    order.set(node, index)
    low.set(node, index)
    index++
    stack.push(node)
    onStack.add(node)
    for (const next of graph.get(node) ?? []) {
      if (!graph.has(next)) continue
      if (!order.has(next)) {
        connect(next)
        low.set(node, Math.min(low.get(node)!, low.get(next)!))
      } else if (onStack.has(next)) {
        low.set(node, Math.min(low.get(node)!, order.get(next)!))
      }
    }
    if (low.get(node) === order.get(node)) {
      const component: string[] = []
      let member: string | undefined
      do {
        member = stack.pop()!
        onStack.delete(member)
        component.push(member)
      } while (member !== node)
      if (component.length > 1 || (graph.get(node) ?? []).includes(node)) found.push(component)
    }
  }
  for (const node of graph.keys()) if (!order.has(node)) connect(node)
  return found
}

test('src/ and routes/ import no module that imports them back, type-only imports included', () => {
  const files = [...sourceFiles(join(ROOT, 'src')), ...sourceFiles(join(ROOT, 'routes'))]
  const graph = new Map(files.map((file) => [file, importsOf(file)]))
  const found = cycles(graph).map((component) => component.map((file) => relative(ROOT, file)).sort())
  assert.deepEqual(found, [], `import cycles:\n${found.map((c) => c.join(' → ')).join('\n')}`)
})

test('the cycle finder reports a type-only cycle', () => {
  const graph = new Map([['a.ts', ['b.ts']], ['b.ts', ['c.ts']], ['c.ts', ['a.ts']], ['d.ts', ['a.ts']]])
  assert.deepEqual(cycles(graph).map((c) => c.sort()), [['a.ts', 'b.ts', 'c.ts']])
})

/**
 * Layers: a folder imports only folders of a lower rank (type-only imports included), so the
 * engine never reaches up into the service or the transports. Folders of one rank do not import
 * each other at all. New top-level folders must be given a rank here.
 */
const RANKS: Record<string, number> = {
  schemas: 0,
  'src/core': 1,
  'src/openapi': 1,
  'src/auth': 2,
  'src/http': 2,
  'src/observe': 2,
  'src/tools': 2,
  'src/acp': 3,
  'src/approval': 3,
  'src/mcp': 3,
  'src/providers': 3,
  'src/bus': 4,
  'src/store': 5,
  'src/turn': 5,
  // Over the bus and the store: writes a turn's events to the one, then publishes them on the other.
  'src/journal': 6,
  'src/notify': 7,
  'src/receipts': 6,
  'src/cluster': 7,
  'src/service': 8,
  'src/transport': 9,
  'src/schedule': 9,
  'src/ui': 9,
  'src/adapters': 10,
  routes: 11,
  'src/app': 12,
  'src/main': 13,
  // The embedding entry (createGateway, tool()): the composition root for an application's own process.
  'src/embed': 13
}

/**
 * Upward imports still to be removed by the restructuring in progress (issue "Second
 * restructuring step"): each is named so that no new one can slip in unnoticed, and the test fails
 * once one is gone so that it is struck from this list.
 */
const PENDING = new Set([
  // The transports receive the composition root's context type; it moves below them with the
  // running-turn state machine.
  'src/transport → src/app'
])

function folderOf (file: string): string {
  const parts = relative(ROOT, file).split('/')
  if (parts[0] !== 'src') return parts[0] as string
  return parts.length > 2 ? `src/${parts[1] as string}` : `src/${(parts[1] as string).replace(/\.ts$/, '')}`
}

test('every folder imports only folders of a lower rank', () => {
  const files = [...sourceFiles(join(ROOT, 'src')), ...sourceFiles(join(ROOT, 'routes'))]
  const unranked = new Set<string>()
  const upward = new Map<string, string>()
  for (const file of files) {
    const from = folderOf(file)
    for (const target of importsOf(file)) {
      const to = folderOf(target)
      if (to === from) continue
      if (RANKS[from] === undefined) unranked.add(from)
      if (RANKS[to] === undefined) unranked.add(to)
      if ((RANKS[to] ?? -1) >= (RANKS[from] ?? -1)) upward.set(`${from} → ${to}`, relative(ROOT, file))
    }
  }
  assert.deepEqual([...unranked], [], 'folders without a rank')
  const fresh = [...upward].filter(([edge]) => !PENDING.has(edge)).map(([edge, file]) => `${edge} (${file})`)
  assert.deepEqual(fresh, [], 'imports of a folder of the same or a higher rank')
  assert.deepEqual([...PENDING].filter((edge) => !upward.has(edge)), [], 'pending exceptions that are gone')
})

/** The engine is handed resolved knobs; reading Config is the service's job. */
test('the engine (src/turn) does not read the configuration schema', () => {
  // Configuration is resolved into the engine's own types by src/service/agent-resolution.ts.
  const config = join(ROOT, 'schemas/config.ts')
  const readers = sourceFiles(join(ROOT, 'src/turn')).filter((file) => importsOf(file).includes(config)).map((file) => relative(ROOT, file))
  assert.deepEqual(readers, [], 'readers of schemas/config in src/turn')
})
