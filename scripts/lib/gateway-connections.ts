// What the gateway's HTTP server keeps from its connections before a request reaches the app: a limit of
// open connections per client and of pipelined requests, a deadline on answers nobody reads, and JSON
// answers to what Node's parser refuses and to request targets that are no path.
import type { ServerType } from '@hono/node-server'
import type { Socket } from 'node:net'
import type { Duplex } from 'node:stream'
import { createServer as createHttpServer, type IncomingMessage, type RequestListener, type ServerOptions } from 'node:http'
import { clientKey } from '../../functions-shared/net/client.ts'

/**
 * A body refused before it was read (413) is still on its way in, so Node closes the connection after
 * the answer: the answer says so (Connection: close) rather than keep-alive, and the client opens another.
 */
export function closeAfterRefusedBody(response: Response): Response {
  if (response.status !== 413) return response
  const headers = new Headers(response.headers)
  headers.set('Connection', 'close')
  return new Response(response.body, { status: response.status, statusText: response.statusText, headers })
}

/** Whose connection it is, for CONNECTION_LIMIT_PER_CLIENT: the client the per-IP rate limits count too. */
export const connectionClient = clientKey

/**
 * The raw answer to a connection past its client's limit, then the connection ends: a 429 in the rate
 * limit's shape (spec §7.1), the limit being on connections open at once (`window: "concurrent"`).
 */
function refuseConnection(socket: Socket, limit: number): void {
  const requestId = crypto.randomUUID()
  const body = JSON.stringify({
    error: 'rate_limited',
    message: `Too many open connections from this client (${limit} at most): close some and retry`,
    request_id: requestId,
    retry_after: 1,
    limit,
    window: 'concurrent',
  })
  socket.on('error', () => {})
  socket.end(
    `HTTP/1.1 429 Too Many Requests\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: ${
      Buffer.byteLength(body)
    }\r\nRetry-After: 1\r\nX-Request-ID: ${requestId}\r\nConnection: close\r\n\r\n${body}`,
    () => socket.destroy(),
  )
}

/**
 * Counts each client's open connections (connectionClient) and refuses those past the limit, so that one
 * client holding connections open (slow headers or bodies, idle keep-alive) cannot take the file
 * descriptors every other client and the database need. A refused connection's requests never reach the app.
 */
export function limitConnections(server: ServerType, limit: number): WeakSet<object> {
  const refused = new WeakSet<object>()
  const open = new Map<string, number>()
  server.on('connection', (socket: Socket) => {
    const client = connectionClient(socket.remoteAddress)
    const count = (open.get(client) ?? 0) + 1
    if (count > limit) {
      refused.add(socket)
      return refuseConnection(socket, limit)
    }
    open.set(client, count)
    socket.once('close', () => {
      const left = (open.get(client) ?? 1) - 1
      if (left > 0) open.set(client, left)
      else open.delete(client)
    })
  })
  return refused
}

/**
 * Closes a connection whose client reads nothing of what it was sent for `timeoutMs`: an answer the client
 * does not read waits in this process's memory (a pipelined request for the API reference's 1.7 MB script
 * on each of 250 connections held 680 MB), and Node puts no deadline on sending it. Progress is a byte
 * leaving for the network, the part of a chunk the socket has written included (libuv's write queue), so
 * a slow client that reads is never cut; a connection with nothing waiting is not concerned (idle
 * keep-alive connections have their own timeout).
 */
export function closeStalledReaders(server: ServerType, timeoutMs: number): () => void {
  const watched = new Map<Socket, { sent: number; queued: number; since: number }>()
  const progress = (socket: Socket) => ({
    sent: socket.bytesWritten - socket.writableLength,
    queued: (socket as unknown as { _handle?: { writeQueueSize?: number } })._handle?.writeQueueSize ?? 0,
  })
  server.on('connection', (socket: Socket) => {
    watched.set(socket, { ...progress(socket), since: Date.now() })
    socket.once('close', () => watched.delete(socket))
  })
  const timer = setInterval(() => {
    const now = Date.now()
    for (const [socket, last] of watched) {
      const p = progress(socket)
      if (socket.writableLength === 0 || p.sent !== last.sent || p.queued !== last.queued) watched.set(socket, { ...p, since: now })
      else if (now - last.since >= timeoutMs) socket.destroy()
    }
  }, Math.max(50, Math.min(5000, Math.ceil(timeoutMs / 4))))
  timer.unref()
  return () => clearInterval(timer)
}

/**
 * The server, with the requests whose target is no path answered here: `OPTIONS *` (asking what the
 * server allows) with 204 and Allow, any other target that is neither a path nor an absolute URL with
 * 400 in JSON with a request id. The adapter answered both with a bare 400 and no body.
 */
export function createGatewayServer(options: ServerOptions, listener: RequestListener) {
  return createHttpServer(options, (incoming, outgoing) => {
    const target = incoming.url ?? ''
    if (target.startsWith('/') || /^https?:\/\//i.test(target)) return listener(incoming, outgoing)
    const requestId = crypto.randomUUID()
    if (target === '*' && incoming.method === 'OPTIONS') {
      outgoing.writeHead(204, { Allow: 'GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS', 'X-Request-ID': requestId })
      return outgoing.end()
    }
    const body = JSON.stringify({
      error: 'bad_request',
      message: `The request target must be a path such as /functions/v1/health, not ${JSON.stringify(target.slice(0, 100))}`,
      request_id: requestId,
    })
    outgoing.writeHead(400, { 'Content-Type': 'application/json; charset=utf-8', 'Content-Length': Buffer.byteLength(body), 'X-Request-ID': requestId })
    outgoing.end(body)
  })
}

/**
 * The most requests one connection may have waiting for their answers (HTTP/1.1 pipelining). Node reads
 * every request a packet holds and serves them all at once, keeping each answer until the ones before it
 * are read: 100 requests for the API reference's script, 7 KB sent on each of 10 connections that read
 * nothing, made it hold 1.85 GB within 8 s. A connection past the limit is closed; clients that pipeline
 * send a few requests ahead, browsers and fetch none.
 */
export const MAX_PIPELINED_REQUESTS = 4

/** Closes a connection past MAX_PIPELINED_REQUESTS; the requests it still holds are not served. */
export function limitPipelining(server: ServerType): WeakSet<object> {
  const waiting = new WeakMap<object, number>()
  const closed = new WeakSet<object>()
  // before the app's listener, so that a request past the limit is known as such when the app is asked
  server.prependListener('request', (req: IncomingMessage, res: { once(event: 'close', fn: () => void): unknown }) => {
    const socket = req.socket
    const n = (waiting.get(socket) ?? 0) + 1
    waiting.set(socket, n)
    res.once('close', () => waiting.set(socket, Math.max(0, (waiting.get(socket) ?? 1) - 1)))
    if (n > MAX_PIPELINED_REQUESTS) {
      closed.add(socket)
      socket.destroy()
    }
  })
  return closed
}

/** Answers what Node's HTTP parser refuses (clientError) in JSON with a request id: 431, 408 or 400. */
export function answerClientErrors(server: ServerType): void {
  server.on('clientError', (err: Error & { code?: string }, socket: Duplex) => {
    if (!socket.writable) return socket.destroy()
    const tooLarge = err.code === 'HPE_HEADER_OVERFLOW'
    const tooSlow = err.code === 'ERR_HTTP_REQUEST_TIMEOUT'
    const requestId = crypto.randomUUID()
    const body = JSON.stringify(
      tooLarge
        ? { error: 'request_header_fields_too_large', message: 'The request line or headers are too large (16 KB at most)', request_id: requestId }
        : tooSlow
        ? { error: 'request_timeout', message: 'The request did not arrive in time', request_id: requestId }
        : { error: 'bad_request', message: 'Malformed HTTP request', request_id: requestId },
    )
    const status = tooLarge ? '431 Request Header Fields Too Large' : tooSlow ? '408 Request Timeout' : '400 Bad Request'
    socket.end(
      `HTTP/1.1 ${status}\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: ${
        Buffer.byteLength(body)
      }\r\nX-Request-ID: ${requestId}\r\nConnection: close\r\n\r\n${body}`,
    )
  })
}
