// The embedded database's PostgreSQL socket. PGlite is one Postgres session; every client of the socket
// (the service's own postgres.js connection, `npm run worker`, psql) shares it, so this server decides
// who has the session and what that client finds in it:
//
// - A client has the session for a whole exchange: its messages up to Sync (or a simple Query) run
//   together, and it keeps the session while its transaction is open (or failed) or while it waits
//   after a Flush in the middle of an extended-protocol exchange. Nobody else's statement can land in
//   its transaction, nor take over its unnamed statement or portal.
// - When the session passes to another client, it is reset first (the session user, the role and every
//   setting) and that client's startup parameters applied again: a `set role anon` or a session-level
//   set_config of one client never changes what another client's statements run as. Session settings
//   therefore last while no other client runs; SET LOCAL inside a transaction is the reliable form.
// - Prepared statements and portals are named per client (prefixed), so two clients' "p1" never meet;
//   a client's statements are deallocated and its open transaction rolled back when it disconnects.
// - A client idle in a transaction while others wait is disconnected after `idleInTransactionMs`
//   (SQLSTATE 25P03, as PostgreSQL's idle_in_transaction_session_timeout), so an abandoned psql
//   `begin` cannot stall the service.
// - Only clients that gave the password count against maxConnections. One that has not must give it
//   within `authenticationTimeoutMs` (as PostgreSQL's authentication_timeout), and at most
//   `maxUnauthenticated` wait at once, the longest-waiting let go for a newcomer: a local process
//   without the password that opened eight sockets and sent nothing held every slot for as long as it
//   liked, and psql, `npm run worker`, a backup and the service's own reconnection (its connection
//   closes after a minute idle) were all refused "too many clients".
// - Temporary tables, session advisory locks and LISTEN belong to the one session: they are dropped
//   when the last client leaves (DISCARD ALL). In-process use of the PGlite instance (db.query) is not
//   kept out of a client's transaction; the stack reaches its database through this socket only.
// This file holds the socket and its clients' connections; pglite-wire.ts the protocol's messages and
// pglite-session.ts the shared session.
import { createServer, type Server, type Socket } from 'node:net'
import type { PGlite } from '@electric-sql/pglite'
import {
  CANCEL_REQUEST,
  fatal,
  GSSENC_REQUEST,
  int32,
  letGo,
  MAX_MESSAGE_BYTES,
  message,
  PROTOCOL_3,
  rename,
  samePassword,
  SSL_REQUEST,
  startupParams,
} from './pglite-wire.ts'
import { type Client, PgliteSession } from './pglite-session.ts'

export interface PgliteServerOptions {
  port: number
  host?: string
  maxConnections?: number
  /** a client idle in a transaction this long while another waits is disconnected (0: never) */
  idleInTransactionMs?: number
  /** a client that has not given the password (or its startup packet) this long after connecting is disconnected */
  authenticationTimeoutMs?: number
  /** clients waiting to authenticate at once; past it the longest-waiting one is disconnected */
  maxUnauthenticated?: number
  /**
   * the password every client must give (cleartext over the local socket, as PostgreSQL's `password`
   * method asks it); empty: none asked, as PostgreSQL's `trust`
   */
  password?: string
}

export class PgliteServer {
  readonly #db: PGlite
  readonly #options: Required<PgliteServerOptions>
  #server: Server | null = null
  readonly #session: PgliteSession
  #nextId = 1
  port = 0

  constructor(db: PGlite, options: PgliteServerOptions) {
    this.#db = db
    this.#options = {
      host: '127.0.0.1',
      maxConnections: 8,
      idleInTransactionMs: 10_000,
      authenticationTimeoutMs: 10_000,
      maxUnauthenticated: 64,
      password: '',
      ...options,
    }
    this.#session = new PgliteSession(db, this.#options)
  }

  get url(): string {
    return `postgres://postgres:${encodeURIComponent(this.#options.password || 'postgres')}@${this.#options.host}:${this.port}/postgres`
  }

  get connections(): number {
    return this.#session.clients.size
  }

  async start(): Promise<void> {
    await this.#db.waitReady
    const server = createServer((socket) => this.#accept(socket))
    this.#server = server
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject)
      server.listen(this.#options.port, this.#options.host, () => {
        server.off('error', reject)
        this.port = (server.address() as { port: number }).port
        resolve()
      })
    })
  }

  async stop(): Promise<void> {
    this.#session.drop()
    const server = this.#server
    this.#server = null
    if (server) await new Promise<void>((resolve) => server.close(() => resolve()))
    // the disconnects settle (an open transaction rolled back) before the database closes
    await this.#session.close()
  }

  #tooMany(socket: Socket): void {
    letGo(socket, fatal('53300', `sorry, too many clients already (the embedded database takes ${this.#options.maxConnections})`))
  }

  #accept(socket: Socket): void {
    if (this.#session.authenticatedCount() >= this.#options.maxConnections) return this.#tooMany(socket)
    // a newcomer does not wait behind clients that connected and never authenticated: the one that has
    // waited longest goes (a client that has the password gives it within a round trip)
    const waiting = [...this.#session.clients].filter((c) => !c.authenticated && !c.closed)
    if (waiting.length >= this.#options.maxUnauthenticated) {
      letGo(
        waiting[0]!.socket,
        fatal('53300', `too many clients waiting to authenticate (${this.#options.maxUnauthenticated}): the one that waited longest is let go`),
      )
      this.#session.disconnect(waiting[0]!)
    }
    socket.setNoDelay(true)
    const client: Client = {
      id: this.#nextId++,
      socket,
      buffer: Buffer.alloc(0),
      started: false,
      params: [],
      awaitingPassword: null,
      pending: [],
      partial: [],
      holding: false,
      statements: new Set(),
      closed: false,
      authenticated: false,
      authTimer: undefined,
    }
    if (this.#options.authenticationTimeoutMs > 0) {
      client.authTimer = setTimeout(() => {
        if (client.authenticated || client.closed) return
        letGo(client.socket, fatal('08P01', `canceling authentication due to timeout (${this.#options.authenticationTimeoutMs} ms)`))
        this.#session.disconnect(client)
      }, this.#options.authenticationTimeoutMs)
      client.authTimer.unref?.()
    }
    this.#session.clients.add(client)
    socket.on('data', (data) => this.#receive(client, data))
    socket.on('error', () => this.#session.disconnect(client))
    socket.on('close', () => this.#session.disconnect(client))
  }

  #receive(client: Client, data: Buffer): void {
    if (client.closed) return
    client.buffer = Buffer.concat([client.buffer, data])
    for (;;) {
      const buf = client.buffer
      if (!client.started) {
        if (buf.length < 8) return
        const length = buf.readInt32BE(0)
        if (length < 8 || length > 10_000) return this.#refuse(client, 'invalid length of startup packet')
        if (buf.length < length) return
        const code = buf.readInt32BE(4)
        const packet = buf.subarray(0, length)
        client.buffer = buf.subarray(length)
        if (code === SSL_REQUEST || code === GSSENC_REQUEST) {
          client.socket.write('N')
          continue
        }
        if (code === CANCEL_REQUEST) {
          // no backend to signal: the request is dropped, as the protocol allows
          client.socket.end()
          return
        }
        if (code !== PROTOCOL_3) {
          client.socket.end(fatal('08P01', 'unsupported frontend protocol'))
          return
        }
        client.started = true
        client.params = startupParams(packet)
        if (this.#options.password) {
          // AuthenticationCleartextPassword: the session is not the client's before the password
          client.awaitingPassword = Buffer.from(packet)
          client.socket.write(message('R', int32(3)))
          continue
        }
        if (!this.#admit(client)) return
        client.pending.push([Buffer.from(packet)])
        this.#session.wake(client)
        continue
      }
      if (buf.length < 5) return
      const length = buf.readInt32BE(1) + 1
      if (length < 5 || length > MAX_MESSAGE_BYTES) return this.#refuse(client, `invalid message length ${length - 1}`)
      if (client.awaitingPassword && length > 1024) return this.#refuse(client, 'invalid password message')
      if (buf.length < length) return
      if (client.awaitingPassword) {
        const startup = client.awaitingPassword
        const given = buf.subarray(5, length - 1) // the PasswordMessage's C string without its NUL
        client.buffer = buf.subarray(length)
        if (buf[0] !== 0x70 /* p */ || !samePassword(given, this.#options.password)) {
          client.closed = true
          this.#session.clients.delete(client)
          client.socket.end(fatal('28P01', 'password authentication failed for user "postgres"'))
          return
        }
        client.awaitingPassword = null
        if (!this.#admit(client)) return
        client.pending.push([startup])
        this.#session.wake(client)
        continue
      }
      const msg = rename(client, Buffer.from(buf.subarray(0, length)))
      client.buffer = buf.subarray(length)
      const type = String.fromCharCode(msg[0]!)
      if (type === 'X') {
        client.socket.end()
        this.#session.disconnect(client)
        return
      }
      client.partial.push(msg)
      // an exchange ends at Sync or with a simple query (or a function call); a Flush hands what was
      // received so far to the session, which the client then keeps until its Sync
      if (type === 'S' || type === 'Q' || type === 'F' || type === 'H') {
        client.pending.push(client.partial)
        client.partial = []
        this.#session.wake(client)
      }
    }
  }

  /** A client that has authenticated takes one of maxConnections, if one is left (false: it was turned away). */
  #admit(client: Client): boolean {
    clearTimeout(client.authTimer)
    if (this.#session.authenticatedCount() >= this.#options.maxConnections) {
      this.#tooMany(client.socket)
      this.#session.disconnect(client)
      return false
    }
    client.authenticated = true
    return true
  }

  /** A protocol violation: the client is told and disconnected, as PostgreSQL does. */
  #refuse(client: Client, why: string): void {
    client.socket.end(fatal('08P01', why))
    this.#session.disconnect(client)
  }
}
