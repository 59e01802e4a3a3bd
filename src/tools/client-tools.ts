/**
 * Client tools: declared with a turn (`client_tools`), offered to the model like any tool, run by
 * the client. The engine never executes them: its gate waits for the client's result
 * (src/turn/client-tool.ts), so `execute` only answers a direct caller.
 */
import type { ClientToolDeclaration } from '../../schemas/client-tools.js'
import { TollgateError } from '../core/errors.js'
import { defineTool, fail, type Tool } from './contract.js'

export function clientTool (declaration: ClientToolDeclaration): Tool {
  return defineTool({
    name: declaration.name,
    description: declaration.description ?? '',
    parameters: declaration.parameters ?? { type: 'object', properties: {} },
    attribution: { provenance: 'extension', source: 'client' },
    runsInClient: true,
    // The client runs it in the user's own session, where it asks its user itself if it must
    // (CopilotKit's useHumanInTheLoop): the gateway does not ask again by default. An operator's
    // always_ask, excluded_tools and read-only profiles still apply (decision 0243).
    needsApproval: false,
    async execute () {
      return fail(`${declaration.name} runs in the client; only the client can answer it`)
    }
  })
}

/** The turn's client tools; a name the gateway already has (or given twice) is refused, never shadowed. */
export function clientTools (declarations: readonly ClientToolDeclaration[], taken: (name: string) => boolean): Tool[] {
  const seen = new Set<string>()
  return declarations.map((declaration) => {
    if (taken(declaration.name) || seen.has(declaration.name)) {
      throw new TollgateError('CLIENT_TOOL_CONFLICT', { detail: declaration.name })
    }
    seen.add(declaration.name)
    return clientTool(declaration)
  })
}
