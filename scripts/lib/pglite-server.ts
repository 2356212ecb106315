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
import { createServer, type Server, type Socket } from 'node:net'
import { createHash, timingSafeEqual } from 'node:crypto'
import type { PGlite } from '@electric-sql/pglite'

const SSL_REQUEST = 80877103
const GSSENC_REQUEST = 80877104
const CANCEL_REQUEST = 80877102
const PROTOCOL_3 = 196608
/** the largest message a client may send (PostgreSQL's limit is 1 GB; nothing here comes near this) */
const MAX_MESSAGE_BYTES = 256 * 1024 * 1024

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

interface Client {
  id: number
  socket: Socket
  buffer: Buffer
  started: boolean
  /** startup parameters to apply whenever the session passes to this client */
  params: [string, string][]
  /** the startup packet, kept until the client gives the password */
  awaitingPassword: Buffer | null
  /** complete exchanges waiting for the session */
  pending: Buffer[][]
  /** messages of the exchange being received */
  partial: Buffer[]
  /** the session is this client's until its transaction ends or its Flush-ed exchange is synced */
  holding: boolean
  statements: Set<string>
  closed: boolean
  /** it gave the password (or none is asked): it counts against maxConnections and may have the session */
  authenticated: boolean
  /** ends the connection of a client that does not authenticate in time */
  authTimer: ReturnType<typeof setTimeout> | undefined
}

const encoder = new TextEncoder()

/**
 * A clean session. On PGlite, SET SESSION AUTHORIZATION DEFAULT (and DISCARD ALL) do not undo a
 * `set session authorization x` (its default is empty), and RESET ALL does not reset the role: the
 * login user is named, then the role and every setting reset.
 */
const RESET_SESSION = 'set session authorization postgres; reset role; reset all;'

function cstring(s: string): Buffer {
  return Buffer.concat([Buffer.from(encoder.encode(s)), Buffer.from([0])])
}

function message(type: string, body: Buffer): Buffer {
  const header = Buffer.alloc(5)
  header.write(type, 0, 'latin1')
  header.writeInt32BE(body.length + 4, 1)
  return Buffer.concat([header, body])
}

const int32 = (n: number): Buffer => {
  const b = Buffer.alloc(4)
  b.writeInt32BE(n)
  return b
}

/** The password given equals the expected one, compared in time that does not tell how much of it matched. */
function samePassword(given: Buffer, expected: string): boolean {
  const digest = (b: Buffer | string) => createHash('sha256').update(b).digest()
  return timingSafeEqual(digest(given), digest(expected))
}

/** A FATAL ErrorResponse, for the clients this server turns away or ends. */
export function fatal(code: string, text: string): Buffer {
  return message('E', Buffer.concat([Buffer.from('SFATAL\0VFATAL\0C'), cstring(code), Buffer.from('M'), cstring(text), Buffer.from([0])]))
}

/**
 * Tells a client that has no slot why and closes its socket once that is written, without waiting for
 * the client to close its end: one that never does would keep the file descriptor.
 */
function letGo(socket: Socket, why: Buffer): void {
  socket.end(why, () => socket.destroy())
}

/** Reads a C string at `offset`: the string and the offset after its NUL. */
function readCString(buf: Buffer, offset: number): [string, number] {
  const end = buf.indexOf(0, offset)
  return [buf.toString('utf8', offset, end), end + 1]
}

export class PgliteServer {
  readonly #db: PGlite
  readonly #options: Required<PgliteServerOptions>
  #server: Server | null = null
  #clients = new Set<Client>()
  #queue: Client[] = []
  #owner: Client | null = null
  /** whose settings the session holds now (null: clean, or its client has left) */
  #sessionOf: Client | null = null
  /** the server's work on the session, one task after another (exchanges, disconnect clean-ups) */
  #tasks: Promise<void> = Promise.resolve()
  #scheduled = false
  #idleTimer: ReturnType<typeof setTimeout> | undefined
  #nextId = 1
  port = 0

  constructor(db: PGlite, options: PgliteServerOptions) {
    this.#db = db
    this.#options = { host: '127.0.0.1', maxConnections: 8, idleInTransactionMs: 10_000, authenticationTimeoutMs: 10_000, maxUnauthenticated: 64, password: '', ...options }
  }

  get url(): string {
    return `postgres://postgres:${encodeURIComponent(this.#options.password || 'postgres')}@${this.#options.host}:${this.port}/postgres`
  }

  get connections(): number {
    return this.#clients.size
  }

  /** Clients that gave the password: those maxConnections counts. */
  #authenticatedCount(): number {
    let n = 0
    for (const c of this.#clients) if (c.authenticated && !c.closed) n++
    return n
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
    clearTimeout(this.#idleTimer)
    for (const client of this.#clients) client.socket.destroy()
    const server = this.#server
    this.#server = null
    if (server) await new Promise<void>((resolve) => server.close(() => resolve()))
    // the disconnects settle (an open transaction rolled back) before the database closes
    for (const client of this.#clients) this.#disconnect(client)
    await this.#tasks
  }

  #schedule(): void {
    if (this.#scheduled) return
    this.#scheduled = true
    this.#tasks = this.#tasks.then(() => {
      this.#scheduled = false
      return this.#pump()
    })
  }

  #tooMany(socket: Socket): void {
    letGo(socket, fatal('53300', `sorry, too many clients already (the embedded database takes ${this.#options.maxConnections})`))
  }

  #accept(socket: Socket): void {
    if (this.#authenticatedCount() >= this.#options.maxConnections) return this.#tooMany(socket)
    // a newcomer does not wait behind clients that connected and never authenticated: the one that has
    // waited longest goes (a client that has the password gives it within a round trip)
    const waiting = [...this.#clients].filter((c) => !c.authenticated && !c.closed)
    if (waiting.length >= this.#options.maxUnauthenticated) {
      letGo(waiting[0]!.socket, fatal('53300', `too many clients waiting to authenticate (${this.#options.maxUnauthenticated}): the one that waited longest is let go`))
      this.#disconnect(waiting[0]!)
    }
    socket.setNoDelay(true)
    const client: Client = { id: this.#nextId++, socket, buffer: Buffer.alloc(0), started: false, params: [], awaitingPassword: null, pending: [], partial: [], holding: false, statements: new Set(), closed: false, authenticated: false, authTimer: undefined }
    if (this.#options.authenticationTimeoutMs > 0) {
      client.authTimer = setTimeout(() => {
        if (client.authenticated || client.closed) return
        letGo(client.socket, fatal('08P01', `canceling authentication due to timeout (${this.#options.authenticationTimeoutMs} ms)`))
        this.#disconnect(client)
      }, this.#options.authenticationTimeoutMs)
      client.authTimer.unref?.()
    }
    this.#clients.add(client)
    socket.on('data', (data) => this.#receive(client, data))
    socket.on('error', () => this.#disconnect(client))
    socket.on('close', () => this.#disconnect(client))
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
        client.params = this.#startupParams(packet)
        if (this.#options.password) {
          // AuthenticationCleartextPassword: the session is not the client's before the password
          client.awaitingPassword = Buffer.from(packet)
          client.socket.write(message('R', int32(3)))
          continue
        }
        if (!this.#admit(client)) return
        client.pending.push([Buffer.from(packet)])
        this.#wake(client)
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
          this.#clients.delete(client)
          client.socket.end(fatal('28P01', 'password authentication failed for user "postgres"'))
          return
        }
        client.awaitingPassword = null
        if (!this.#admit(client)) return
        client.pending.push([startup])
        this.#wake(client)
        continue
      }
      const msg = this.#rename(client, Buffer.from(buf.subarray(0, length)))
      client.buffer = buf.subarray(length)
      const type = String.fromCharCode(msg[0]!)
      if (type === 'X') {
        client.socket.end()
        this.#disconnect(client)
        return
      }
      client.partial.push(msg)
      // an exchange ends at Sync or with a simple query (or a function call); a Flush hands what was
      // received so far to the session, which the client then keeps until its Sync
      if (type === 'S' || type === 'Q' || type === 'F' || type === 'H') {
        client.pending.push(client.partial)
        client.partial = []
        this.#wake(client)
      }
    }
  }

  /** Startup parameters worth applying per client (user and database are the session's own). */
  #startupParams(packet: Buffer): [string, string][] {
    const params: [string, string][] = []
    let offset = 8
    while (offset < packet.length - 1) {
      const [key, next] = readCString(packet, offset)
      const [value, after] = readCString(packet, next)
      offset = after
      if (!['user', 'database', 'replication', 'options', 'client_encoding'].includes(key)) params.push([key, value])
    }
    return params
  }

  /** Gives prepared statement and portal names a per-client prefix (the unnamed ones stay unnamed). */
  #rename(client: Client, msg: Buffer): Buffer {
    const type = String.fromCharCode(msg[0]!)
    const prefix = (name: string) => (name === '' ? '' : `c${client.id}_${name}`)
    const rebuild = (parts: Buffer[]) => message(type, Buffer.concat(parts))
    if (type === 'P') {
      const [name, next] = readCString(msg, 5)
      const renamed = prefix(name)
      if (renamed) client.statements.add(renamed)
      return rebuild([cstring(renamed), msg.subarray(next)])
    }
    if (type === 'B') {
      const [portal, next] = readCString(msg, 5)
      const [statement, after] = readCString(msg, next)
      return rebuild([cstring(prefix(portal)), cstring(prefix(statement)), msg.subarray(after)])
    }
    if (type === 'E') {
      const [portal, next] = readCString(msg, 5)
      return rebuild([cstring(prefix(portal)), msg.subarray(next)])
    }
    if (type === 'D' || type === 'C') {
      const [name] = readCString(msg, 6)
      if (type === 'C' && msg[5] === 0x53) client.statements.delete(prefix(name))
      return rebuild([msg.subarray(5, 6), cstring(prefix(name))])
    }
    return msg
  }

  /** A client that has authenticated takes one of maxConnections, if one is left (false: it was turned away). */
  #admit(client: Client): boolean {
    clearTimeout(client.authTimer)
    if (this.#authenticatedCount() >= this.#options.maxConnections) {
      this.#tooMany(client.socket)
      this.#disconnect(client)
      return false
    }
    client.authenticated = true
    return true
  }

  /** A protocol violation: the client is told and disconnected, as PostgreSQL does. */
  #refuse(client: Client, why: string): void {
    client.socket.end(fatal('08P01', why))
    this.#disconnect(client)
  }

  #wake(client: Client): void {
    if (this.#owner === client) {
      clearTimeout(this.#idleTimer)
    } else if (!this.#queue.includes(client)) {
      this.#queue.push(client)
      this.#armIdleTimer()
    }
    this.#schedule()
  }

  /** Runs exchanges, one client at a time, until nothing can run. */
  async #pump(): Promise<void> {
    for (;;) {
      let client = this.#owner
      if (!client || client.pending.length === 0) {
        if (client) break // the owner keeps the session and has nothing to run: the others wait
        client = this.#queue.shift() ?? null
        if (!client) break
        if (client.closed || client.pending.length === 0) continue
      }
      const exchange = client.pending.shift()!
      const to = client
      try {
        await this.#db.runExclusive(async () => {
          if (this.#sessionOf !== to) {
            await this.#switchTo(to)
            this.#sessionOf = to
          }
          for (const msg of exchange) await this.#send(to, msg)
        })
        await this.#db.syncToFs()
      } catch (err) {
        // the session refused the exchange itself (not a SQL error, which is an ErrorResponse)
        to.socket.end(fatal('XX000', `the embedded database failed: ${(err as Error).message}`))
        this.#disconnect(to)
        continue
      }
      const flushed = exchange.at(-1)![0] === 0x48 // 'H': the rest of the exchange is still to come
      client.holding = flushed || this.#db.isInTransaction()
      if (client.holding) {
        // kept also when the client has just left: its clean-up (the rollback) comes before anyone else
        this.#owner = client
        this.#armIdleTimer()
      } else {
        if (this.#owner === client) this.#owner = null
        if (client.pending.length > 0) this.#queue.push(client)
      }
    }
  }

  /** One message to the session; what it answers goes to the client (while it is there). */
  async #send(client: Client, msg: Uint8Array): Promise<void> {
    await this.#db.execProtocolRawStream(msg, {
      syncToFs: false,
      onRawData: (data) => {
        if (!client.closed && client.socket.writable) client.socket.write(Buffer.from(data))
      },
    })
  }

  /** A statement of the server's own (a reset, a rollback); its answer is dropped. */
  async #exec(sql: string): Promise<void> {
    await this.#execMessage(message('Q', cstring(sql)))
  }

  async #execMessage(msg: Buffer): Promise<void> {
    await this.#db.execProtocolRawStream(msg, { syncToFs: false, onRawData: () => {} })
  }

  /** A clean session with the client's startup parameters; each its own statement, so a parameter the
   *  session refuses cannot undo the reset. */
  async #switchTo(client: Client): Promise<void> {
    const quote = (s: string) => `'${s.replaceAll("'", "''")}'`
    await this.#exec(RESET_SESSION)
    for (const [k, v] of client.params) await this.#exec(`select pg_catalog.set_config(${quote(k)}, ${quote(v)}, false)`)
  }

  #armIdleTimer(): void {
    clearTimeout(this.#idleTimer)
    const owner = this.#owner
    if (!owner || this.#queue.length === 0 || owner.pending.length > 0 || this.#options.idleInTransactionMs <= 0) return
    this.#idleTimer = setTimeout(() => {
      if (this.#owner !== owner || this.#queue.length === 0) return
      owner.socket.end(fatal('25P03', `terminating connection due to idle-in-transaction timeout (${this.#options.idleInTransactionMs} ms while another client waited for the embedded database)`))
      this.#disconnect(owner)
    }, this.#options.idleInTransactionMs)
    this.#idleTimer.unref?.()
  }

  #disconnect(client: Client): void {
    if (client.closed) return
    client.closed = true
    clearTimeout(client.authTimer)
    client.pending = []
    client.partial = []
    if (!client.authenticated) {
      // it never had the session: nothing of it to clean
      this.#clients.delete(client)
      return
    }
    this.#queue = this.#queue.filter((c) => c !== client)
    this.#tasks = this.#tasks.then(async () => {
      try {
        await this.#db.runExclusive(async () => {
          if (this.#owner === client) {
            // its transaction (or its half-done extended exchange) ends with it
            await this.#execMessage(message('S', Buffer.alloc(0))) // ends an extended exchange left open
            if (this.#db.isInTransaction()) await this.#exec('rollback')
            this.#owner = null
          }
          if (this.#authenticatedCount() === 0) {
            // the last client: everything a session holds goes (temporary tables, advisory locks, LISTEN too)
            await this.#exec('discard all')
            await this.#exec(RESET_SESSION)
            this.#sessionOf = null
          } else {
            for (const name of client.statements) await this.#exec(`deallocate "${name.replaceAll('"', '""')}"`)
            if (this.#sessionOf === client) {
              await this.#exec(RESET_SESSION)
              this.#sessionOf = null
            }
          }
        })
        await this.#db.syncToFs()
      } catch {
        // the database is closing: nothing left to clean
      } finally {
        this.#clients.delete(client)
      }
    })
    this.#armIdleTimer()
    this.#schedule()
  }
}
