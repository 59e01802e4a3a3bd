import { test } from 'node:test'
import assert from 'node:assert/strict'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { WebSocketServer } from 'ws'
import { checkToken } from '@tollgate/client'
import { createNodeClient } from '@tollgate/client/node'
import { eventually } from '../helpers/eventually.js'

test('the client offers tollgate.v1 and bearer.<token> as subprotocols and sends the token as a Bearer header over HTTP', async (t) => {
  const seen: { protocols?: string, authorization?: string } = {}
  const server = createServer((req, res) => {
    seen.authorization = req.headers.authorization
    res.writeHead(404, { 'content-type': 'application/problem+json' })
    res.end(JSON.stringify({ type: 'about:blank', title: 'no turn', status: 404, code: 'TURN_NOT_FOUND', detail: 'no turn with this id' }))
  })
  // A real WebSocket peer standing in for the gateway's handshake and hello.
  const wss = new WebSocketServer({ server, handleProtocols: (protocols) => (protocols.has('tollgate.v1') ? 'tollgate.v1' : false) })
  wss.on('connection', (socket, req) => {
    seen.protocols = req.headers['sec-websocket-protocol']
    socket.on('message', (data: Buffer) => {
      const frame = JSON.parse(data.toString('utf8')) as { type: string, ref?: string }
      if (frame.type === 'hello') socket.send(JSON.stringify({ type: 'welcome', ref: frame.ref, connection_id: 'ws_test', heartbeat_ms: 0 }))
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  const client = createNodeClient({ url: `http://127.0.0.1:${port}`, token: 'abc.def-ghi_jkl' })
  t.after(async () => {
    client.close()
    for (const c of wss.clients) c.terminate()
    wss.close()
    await new Promise<void>((resolve) => server.close(() => resolve()))
  })
  await client.connect()
  assert.equal(client.connectionId, 'ws_test')
  assert.deepEqual(seen.protocols?.split(',').map((p) => p.trim()), ['tollgate.v1', 'bearer.abc.def-ghi_jkl'])
  await assert.rejects(client.getTurn('turn_x'), { code: 'TURN_NOT_FOUND', status: 404, message: 'no turn with this id' })
  assert.equal(seen.authorization, 'Bearer abc.def-ghi_jkl')
})

test('a token a subprotocol cannot carry is refused before anything is sent', () => {
  assert.throws(() => checkToken('has space'), { code: 'INVALID_TOKEN' })
  assert.throws(() => checkToken('semi;colon'), { code: 'INVALID_TOKEN' })
  assert.equal(checkToken(''), undefined)
  assert.equal(checkToken('eyJ.e30.sig'), 'eyJ.e30.sig')
})

test('a socket that stays silent past two heartbeats is dropped and the client reconnects', async (t) => {
  let connections = 0
  const server = createServer()
  // This peer answers hello with a 50 ms heartbeat, then ignores every ping: a half-open connection.
  const wss = new WebSocketServer({ server, handleProtocols: () => 'tollgate.v1' })
  wss.on('connection', (socket) => {
    connections += 1
    socket.on('message', (data: Buffer) => {
      const frame = JSON.parse(data.toString('utf8')) as { type: string, ref?: string }
      if (frame.type === 'hello') socket.send(JSON.stringify({ type: 'welcome', ref: frame.ref, connection_id: `ws_${connections}`, heartbeat_ms: 50 }))
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  const client = createNodeClient({ url: `http://127.0.0.1:${port}`, reconnect: { initialDelayMs: 10, maxDelayMs: 20 } })
  const closes: number[] = []
  client.on((n) => { if (n.type === 'state' && n.state === 'reconnecting' && n.closeCode !== undefined) closes.push(n.closeCode) })
  t.after(async () => {
    client.close()
    for (const c of wss.clients) c.terminate()
    wss.close()
    await new Promise<void>((resolve) => server.close(() => resolve()))
  })
  await client.connect()
  await eventually(() => connections >= 2, { what: 'a reconnect after the silent socket was dropped' })
  assert.equal(closes[0], 4001)
})

test('closing the client while a connection attempt is still pending throws nothing', async () => {
  // A listening socket that never completes the WebSocket handshake keeps the attempt pending.
  const server = createServer(() => {})
  const held: Array<Promise<void>> = []
  // The upgrade socket is left half-open by the server: the client's end of it is the signal.
  server.on('upgrade', (_req, socket) => {
    held.push(new Promise((resolve) => socket.once('end', () => { socket.destroy(); resolve() })))
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  const client = createNodeClient({ url: `http://127.0.0.1:${port}` })
  const connecting = client.connect()
  await eventually(() => held.length > 0, { what: 'the connection attempt to reach the server' })
  client.close()
  await assert.rejects(connecting, { code: 'CLOSED' })
  // The client's socket has errored and closed (where a late error would be thrown) by the time
  // the server reads the end of the connection.
  await Promise.all(held)
  await new Promise<void>((resolve) => server.close(() => resolve()))
})
