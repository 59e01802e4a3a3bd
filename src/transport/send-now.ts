/**
 * Node corks a response at its first write and uncorks it on the next tick. A stream that starts
 * a turn writes its headers and first frames in the middle of the turn's set-up, which goes on in
 * the same run of microtasks, so they would wait for all of it (a quarter of a millisecond on the
 * benchmark machine). Uncorking sends them at once, in one write; Node's own uncork on the next
 * tick then finds nothing corked.
 *
 * Which cork depends on the Node version. Node 20 corks the socket, and the chunked frame is in
 * the socket's buffer. Node 24 corks the response itself (`writableCorked` counts it) and keeps a
 * chunked body in the response until that is uncorked, which writes it to the socket and uncorks
 * the socket: uncorking only the socket there sent nothing at once, and at the next tick the
 * headers, the chunk's size line, the frame and its line end went out as four writes. A response
 * with no cork of its own (its socket was corked already) has its bytes in the socket.
 */
import type { ServerResponse } from 'node:http'

export function sendNow (raw: ServerResponse): void {
  if (raw.writableCorked > 0) raw.uncork()
  else raw.socket?.uncork()
}
