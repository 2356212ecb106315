// The one PGlite session that every client of the embedded database's socket shares: which client has it
// and runs its exchanges, its reset when it passes to another client, and its clean-up when one leaves.
import type { Socket } from 'node:net'
import type { PGlite } from '@electric-sql/pglite'
import { cstring, fatal, message } from './pglite-wire.ts'

/**
 * A clean session. On PGlite, SET SESSION AUTHORIZATION DEFAULT (and DISCARD ALL) do not undo a
 * `set session authorization x` (its default is empty), and RESET ALL does not reset the role: the
 * login user is named, then the role and every setting reset.
 */
const RESET_SESSION = 'set session authorization postgres; reset role; reset all;'

export interface Client {
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

export class PgliteSession {
  readonly #db: PGlite
  readonly #options: { idleInTransactionMs: number }
  readonly clients = new Set<Client>()
  #queue: Client[] = []
  #owner: Client | null = null
  /** whose settings the session holds now (null: clean, or its client has left) */
  #sessionOf: Client | null = null
  /** the server's work on the session, one task after another (exchanges, disconnect clean-ups) */
  #tasks: Promise<void> = Promise.resolve()
  #scheduled = false
  #idleTimer: ReturnType<typeof setTimeout> | undefined

  constructor(db: PGlite, options: { idleInTransactionMs: number }) {
    this.#db = db
    this.#options = options
  }

  /** Clients that gave the password: those maxConnections counts. */
  authenticatedCount(): number {
    let n = 0
    for (const c of this.clients) if (c.authenticated && !c.closed) n++
    return n
  }

  /** The server is stopping: no idle timer, and every client's socket destroyed. */
  drop(): void {
    clearTimeout(this.#idleTimer)
    for (const client of this.clients) client.socket.destroy()
  }

  /** Every client disconnected, and the clean-ups settled (an open transaction rolled back). */
  async close(): Promise<void> {
    for (const client of this.clients) this.disconnect(client)
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

  wake(client: Client): void {
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
        this.disconnect(to)
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
      owner.socket.end(
        fatal(
          '25P03',
          `terminating connection due to idle-in-transaction timeout (${this.#options.idleInTransactionMs} ms while another client waited for the embedded database)`,
        ),
      )
      this.disconnect(owner)
    }, this.#options.idleInTransactionMs)
    this.#idleTimer.unref?.()
  }

  disconnect(client: Client): void {
    if (client.closed) return
    client.closed = true
    clearTimeout(client.authTimer)
    client.pending = []
    client.partial = []
    if (!client.authenticated) {
      // it never had the session: nothing of it to clean
      this.clients.delete(client)
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
          if (this.authenticatedCount() === 0) {
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
        this.clients.delete(client)
      }
    })
    this.#armIdleTimer()
    this.#schedule()
  }
}
