/**
 * `http_tools.<name>` as tools: built once at start from config. A declaration the gateway cannot
 * honour (its secret unset or too short, its condition not JSON Logic) stops the start.
 */
import { ConfigError } from '../../core/config.js'
import type { Config } from '../../core/config.js'
import { newWebhookMessageId, webhookSecretKey } from '../../core/security/webhook-signature.js'
import { defineTool, type Tool } from '../contract.js'
import { createDestinationGuard } from '../builtin/net-guard.js'
import { callHttpTool } from './call.js'
import { approvalCondition, ConditionError } from './condition.js'

/** Standard Webhooks asks for 24 to 64 random bytes. */
const MIN_SECRET_BYTES = 24

export function createHttpTools (config: Config, env: NodeJS.ProcessEnv): Tool[] {
  return Object.entries(config.http_tools).map(([name, declared]) => {
    const where = `http_tools.${name}`
    const secret = env[declared.secret_env]
    if (secret === undefined || secret === '') throw new ConfigError(`${where}.secret_env names ${declared.secret_env}, which is not set`)
    if (webhookSecretKey(secret).length < MIN_SECRET_BYTES) {
      throw new ConfigError(`${where}: the secret in ${declared.secret_env} must be whsec_ and base64 of at least ${MIN_SECRET_BYTES} bytes`)
    }
    let needsApproval
    try {
      needsApproval = approvalCondition(declared.needs_approval)
    } catch (err) {
      if (err instanceof ConditionError) throw new ConfigError(`${where}.${err.message}`)
      throw err
    }
    const options = {
      tool: name,
      url: new URL(declared.url),
      secret,
      timeoutMs: declared.timeout_ms,
      maxAttempts: declared.idempotent ? declared.max_attempts : 1,
      maxResponseBytes: declared.max_response_bytes,
      guard: createDestinationGuard({ allowHosts: [], allowPrivate: declared.allow_private })
    }
    return defineTool({
      name,
      description: declared.description,
      parameters: declared.parameters,
      attribution: { provenance: 'extension', source: `http:${name}` },
      needsApproval,
      ...(declared.risk === undefined ? {} : { risk: declared.risk }),
      async execute (args, ctx) {
        const body = JSON.stringify({ tool: name, call_id: ctx.callId, turn_id: ctx.turnId, tenant: ctx.tenant ?? 'local', arguments: args })
        const progress = ctx.progress === undefined ? {} : { progress: ctx.progress }
        return await callHttpTool(options, { messageId: newWebhookMessageId(), body, signal: ctx.signal, ...progress })
      }
    })
  })
}
