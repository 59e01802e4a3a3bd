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
