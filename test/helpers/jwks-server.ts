/**
 * A real HTTP server publishing a JSON Web Key Set, as an identity provider does: the network
 * boundary of JWKS verification. Keys are generated with jose; tests can rotate, break or stall it.
 */
import { createServer, type Server } from 'node:http'
import type { AddressInfo, Socket } from 'node:net'
import { exportJWK, generateKeyPair, type CryptoKey, type JWK } from 'jose'

export interface SigningKey {
  kid: string
  alg: string
  privateKey: CryptoKey
  publicKey: CryptoKey
}

export interface JwksServer {
  url: string
  /** Requests received for the key set. */
  fetches: number
  /** `ok` serves the set; `error` answers 500; `hang` never answers. */
  mode: 'ok' | 'error' | 'hang'
  addKey (alg: string, kid?: string): Promise<SigningKey>
  close (): Promise<void>
}

export async function startJwksServer (): Promise<JwksServer> {
  const keys: JWK[] = []
  const sockets = new Set<Socket>()
  const state: JwksServer = {
    url: '',
    fetches: 0,
    mode: 'ok',
    async addKey (alg, kid = `${alg.toLowerCase()}-${keys.length + 1}`) {
      const pair = await generateKeyPair(alg, { extractable: true })
      keys.push({ ...await exportJWK(pair.publicKey), kid, alg, use: 'sig' })
      return { kid, alg, privateKey: pair.privateKey, publicKey: pair.publicKey }
    },
    async close () {
      for (const s of sockets) s.destroy()
      await new Promise<void>((resolve) => server.close(() => resolve()))
    }
  }
  const server: Server = createServer((req, res) => {
    if (req.url !== '/.well-known/jwks.json') {
      res.writeHead(404).end()
      return
    }
    state.fetches += 1
    if (state.mode === 'hang') return
    if (state.mode === 'error') {
      res.writeHead(500, { 'content-type': 'text/plain' }).end('key service down')
      return
    }
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ keys }))
  })
  server.on('connection', (s) => { sockets.add(s); s.on('close', () => sockets.delete(s)) })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  state.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/.well-known/jwks.json`
  return state
}
