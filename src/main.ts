/**
 * Process entry point: load config, build the gateway, listen, and shut down gracefully
 * (running turns cancelled and recorded, sockets closed with 1001) on SIGINT/SIGTERM.
 */
import closeWithGrace from 'close-with-grace'
import { ConfigError, loadConfig } from './core/config.js'
import { buildServer } from './app/server.js'

/** A configuration problem is the operator's to fix: its lines, no stack, exit code 2. */
function exitOnConfigError (err: unknown): never {
  if (err instanceof ConfigError) {
    process.stderr.write(`tollgate: ${err.message}\n`)
    process.exit(2)
  }
  throw err
}

async function main (): Promise<void> {
  let config
  try {
    config = loadConfig()
  } catch (err) {
    exitOnConfigError(err)
  }
  const gateway = await buildServer({ config }).catch(exitOnConfigError)
  closeWithGrace({ delay: config.server.shutdown_timeout_ms }, async ({ signal, err }) => {
    if (err !== undefined) gateway.log.error({ err }, 'shutting down after an error')
    else gateway.log.info({ signal }, 'shutting down')
    await gateway.close()
  })
  const address = await gateway.app.listen({ host: config.server.host, port: config.server.port })
  const agent = config.agents[config.default_agent]
  const provider = agent === undefined ? undefined : config.providers[agent.provider]
  gateway.log.info({ address, agent: config.default_agent, provider: provider?.kind }, `tollgate listening on ${address}`)
  const start = gateway.auth.startToken
  if (start !== undefined) {
    // On the terminal, not in the log pipeline: the token is a credential, printed once for the person starting it.
    process.stderr.write(`tollgate: auth.mode "generated": the bearer token of this start (valid until ${start.expiresAt}, ` +
      `void after a restart):\n\n  ${start.token}\n\nPaste it under "Access token" on the page, or: TOLLGATE_TOKEN=<token> npx tollgate chat\n`)
  }
  if (provider?.kind === 'demo') {
    gateway.log.info('the default agent uses the embedded DEMO provider: a scripted stand-in, not a language model')
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`tollgate: failed to start: ${err instanceof Error ? err.stack ?? err.message : String(err)}\n`)
  process.exit(1)
})
