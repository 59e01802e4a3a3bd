/**
 * The bash grammar the permission rules read shell commands with: tree-sitter-bash's WebAssembly
 * build run by web-tree-sitter (decision 0211). Loaded once at gateway start; parsing is
 * synchronous after that, so the approval gate never waits on it.
 */
import { createRequire } from 'node:module'
import { Language, Parser, type Node } from 'web-tree-sitter'

export type SyntaxNode = Node

/** Past this the command is not read at all: it asks, like any command the parser cannot read. */
export const MAX_PARSED_COMMAND_CHARS = 65_536

export interface ShellSyntax {
  /**
   * Reads the command's syntax tree with `read`, or gives null when it is too long or the parser
   * gave up. The tree lives in WebAssembly memory and is freed when `read` returns: keep no node.
   */
  read: <T>(command: string, read: (root: SyntaxNode, hasError: boolean) => T) => T | null
  close: () => void
}

export async function loadShellSyntax (): Promise<ShellSyntax> {
  const require = createRequire(import.meta.url)
  await Parser.init()
  const language = await Language.load(require.resolve('tree-sitter-bash/tree-sitter-bash.wasm'))
  const parser = new Parser()
  parser.setLanguage(language)
  return {
    read (command, read) {
      if (command.length > MAX_PARSED_COMMAND_CHARS) return null
      const tree = parser.parse(command)
      if (tree === null) return null
      try {
        return read(tree.rootNode, tree.rootNode.hasError)
      } finally {
        tree.delete()
      }
    },
    close () { parser.delete() }
  }
}
