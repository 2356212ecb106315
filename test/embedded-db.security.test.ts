// The embedded database is one PGlite session shared by every client of its socket. A client that
// poisons that session — a role, a session setting, an open or an aborted transaction, a prepared
// statement of the same name, an exchange cut off in the middle — must not change what the service's
// own queries run as, nor lose or mix up their results; what a client leaves behind is gone when it
// disconnects; /health says degraded when the service cannot run a query as its own roles.
import { connect, type Socket } from 'node:net'
import { readFile } from 'node:fs/promises'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { inject } from 'vitest'
import postgres from 'postgres'
import { type EmbeddedDb, startEmbedded } from '../scripts/lib/embedded-db.ts'
import { createDb, type Sql } from '../functions-shared/db/client.ts'
import { migrateRepository } from '../scripts/lib/migrations.ts'
import { createTestApp, json, type TestApp } from './helpers/app.ts'
import { createUser } from './helpers/users.ts'
import { bearer } from './helpers/tokens.ts'

const IDLE_IN_TRANSACTION_MS = 300
const AUTHENTICATION_TIMEOUT_MS = 400
const MAX_UNAUTHENTICATED = 12
let embedded: EmbeddedDb
let app: Sql
let t: TestApp
const others: postgres.Sql[] = []

beforeAll(async () => {
  // always the embedded database (also when the suite runs against a server): it is what is tested
  const dump = inject('pgliteDump')
  embedded = await startEmbedded({
    port: 0,
    ...(dump ? { loadDataDir: new Blob([new Uint8Array(await readFile(dump))]) } : {}),
    idleInTransactionMs: IDLE_IN_TRANSACTION_MS,
    authenticationTimeoutMs: AUTHENTICATION_TIMEOUT_MS,
    maxUnauthenticated: MAX_UNAUTHENTICATED,
  })
  app = createDb(embedded.url, { max: 1, prepare: true })
  if (!dump) await migrateRepository(app)
  t = createTestApp({ sql: app, env: { RATE_LIMIT_AUTH_PER_MINUTE: '1000', RATE_LIMIT_WALLET_PER_MINUTE: '1000' } })
})
afterAll(async () => {
  await Promise.all(others.map((o) => o.end({ timeout: 1 }).catch(() => {})))
  await app?.end({ timeout: 1 })
  await embedded?.close()
})

/** Another client of the socket, as psql would be (simple queries, one connection). */
function other(): postgres.Sql {
  const sql = postgres(embedded.url, { max: 1, prepare: false, onnotice: () => {} })
  others.push(sql)
  return sql
}

/** What the service can do, checked end to end: sign up through the local auth, read a wallet as the user, health. */
async function serviceWorks(): Promise<void> {
  const signup = await t.auth.request('/auth/v1/signup', {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ email: `s-${crypto.randomUUID().slice(0, 8)}@example.mr`, password: 'secret-123' }),
  })
  expect(signup.status, await signup.clone().text()).toBe(200)
  const user = await createUser(app)
  const balance = await t.request('/wallet/balance', { headers: bearer(user.token) })
  const body = await json(balance)
  expect(balance.status, JSON.stringify(body)).toBe(200)
  expect(body).toMatchObject({ user_id: user.id, token_balance: 50 })
  // as the user, through RLS: its own profile and nothing else
  const me = await json(await t.request('/me', { headers: bearer(user.token) }))
  expect(me.id).toBe(user.id)
  const health = await t.request('/health')
  expect(await json(health)).toMatchObject({ status: 'ok', database: { reachable: true, roles: true } })
}

describe('a client that poisons the shared session', () => {
  it('asks every client for the password: a wrong or missing one is refused (28P01) before the session is touched', async () => {
    expect(new URL(embedded.url).password).toMatch(/^[A-Za-z0-9_-]{32}$/)
    for (const wrong of ['postgres', '', 'x'.repeat(2000)]) {
      const url = new URL(embedded.url)
      url.password = wrong
      const guess = postgres(url.toString(), { max: 1, onnotice: () => {}, connect_timeout: 5 })
      await expect(guess`select 1`).rejects.toMatchObject({ code: wrong.length > 1000 ? '08P01' : '28P01' })
      await guess.end({ timeout: 1 }).catch(() => {})
    }
    await serviceWorks()
  })

  it('set role anon, kept connected: the service still runs as its own roles', async () => {
    const psql = other()
    await psql`set role anon`
    expect((await psql`select current_user as u`)[0]!.u).toBe('anon')
    await serviceWorks()
    // the session passed back to the client: clean (its setting lasted while it alone ran)
    const [row] = await psql`select current_user as u`
    expect(row!.u).toBe('postgres')
    await psql.end()
  })

  it("session-level request.jwt.claims and role authenticated: the service's users still see only their rows", async () => {
    const victim = await createUser(app)
    const psql = other()
    await psql`select set_config('request.jwt.claims', ${
      JSON.stringify({ sub: victim.id, role: 'authenticated' })
    }, false), set_config('role', 'authenticated', false)`
    const intruder = await createUser(app)
    const me = await json(await t.request('/me', { headers: bearer(intruder.token) }))
    expect(me.id).toBe(intruder.id)
    const ledger = await json(await t.request('/wallet/ledger', { headers: bearer(intruder.token) }))
    expect(ledger.items.every((e: { delta: number }) => typeof e.delta === 'number')).toBe(true)
    const [[asService]] = await Promise.all([app`select current_user as u, current_setting('request.jwt.claims', true) as c`])
    expect(asService).toEqual({ u: 'postgres', c: '' })
    await psql.end()
  })

  it('an open transaction: the service waits, then the idle client is cut off and its work rolled back', async () => {
    const user = await createUser(app)
    await t.request('/wallet/balance', { headers: bearer(user.token) }) // the wallet exists: 50
    const psql = other()
    let begun!: () => void
    const hasBegun = new Promise<void>((r) => (begun = r))
    const cut = psql.begin(async (tx) => {
      await tx`update public.wallets set token_balance = 999999 where user_id = ${user.id}`
      begun()
      await new Promise((r) => setTimeout(r, 10 * IDLE_IN_TRANSACTION_MS)) // idle in transaction
      await tx`select 1`
    })
    const failure = cut.then(() => null, (e: Error & { code?: string }) => e)
    await hasBegun // the transaction holds the session (a fixed pause lost this race on a loaded machine)
    const balance = await json(await t.request('/wallet/balance', { headers: bearer(user.token) }))
    expect(balance.token_balance).toBe(50)
    const err = await failure
    // cut off while idle: the client learns it at its next statement (as with PostgreSQL's own timeout)
    expect(err?.message).toMatch(/idle-in-transaction timeout|CONNECTION_CLOSED/)
    const [w] = await app`select token_balance::int as b from public.wallets where user_id = ${user.id}`
    expect(w!.b).toBe(50)
    await serviceWorks()
  })

  it('an aborted transaction left open: the same', async () => {
    const psql = other()
    let begun!: () => void
    const hasBegun = new Promise<void>((r) => (begun = r))
    const aborted = psql.begin(async (tx) => {
      await tx`select 1 / 0`.catch(() => {}) // the transaction is now failed
      begun()
      await new Promise((r) => setTimeout(r, 10 * IDLE_IN_TRANSACTION_MS))
    })
    const done = aborted.then(() => null, (e: Error) => e)
    await hasBegun
    await serviceWorks()
    expect((await done)?.message).toMatch(/idle-in-transaction timeout|CONNECTION_CLOSED/)
  })

  it('prepared statements of the same name on two clients stay apart, and go when their client does', async () => {
    const a = await rawClient()
    const b = await rawClient()
    await a.parse('s1', 'select 1 as one')
    await b.parse('s1', 'select 2 as two')
    expect(await a.executeNamed('s1')).toContain('one')
    expect(await b.executeNamed('s1')).toContain('two')
    a.socket.destroy()
    // exactly the two raw clients' statements (c<client>_s1): the service's own client prepares statements
    // named c<client>_<random id><count>, which a LIKE 'c%_s1' also matched when the id ended in s
    await waitFor(async () => (await app`select count(*)::int as n from pg_prepared_statements where name ~ '^c[0-9]+_s1$'`)[0]!.n === 1)
    b.socket.destroy()
    await waitFor(async () => (await app`select count(*)::int as n from pg_prepared_statements where name ~ '^c[0-9]+_s1$'`)[0]!.n === 0)
    await serviceWorks()
  })

  it("a client cut off in the middle of an extended exchange (Parse, Bind, Flush) takes nothing of the service's with it", async () => {
    const c = await rawClient()
    c.socket.write(Buffer.concat([msg('P', cstr(''), cstr('select pg_sleep(0)'), Buffer.alloc(2)), msg('B', cstr(''), cstr(''), Buffer.alloc(6)), msg('H')]))
    await new Promise((r) => setTimeout(r, 20))
    c.socket.destroy()
    await serviceWorks()
  })

  it('set session authorization (the session user itself): the service still runs as its own roles', async () => {
    const psql = other()
    await psql`set session authorization anon`
    expect((await psql`select session_user as s`)[0]!.s).toBe('anon')
    await serviceWorks()
    const [row] = await app`select session_user as s, current_user as u`
    expect(row).toEqual({ s: 'postgres', u: 'postgres' })
    await psql.end()
  })

  it('a startup parameter the session refuses does not undo the reset when the session passes to its client', async () => {
    const psql = other()
    await psql`set role anon`
    const odd = postgres(embedded.url, {
      max: 1,
      prepare: false,
      onnotice: () => {},
      connection: { 'no.such_setting': 'x', statement_timeout: 'not-a-number' } as never,
    })
    others.push(odd)
    const [row] = await odd`select current_user as u`.catch(() => [{ u: 'refused' }])
    expect(row!.u).not.toBe('anon')
    await serviceWorks()
    await odd.end()
    await psql.end()
  })

  it('a client that disconnects leaves a clean session to the next one', async () => {
    const psql = other()
    await psql`set role anon`
    await psql`select set_config('request.jwt.claims', '{"sub":"x"}', false)`
    await psql.end()
    const next = other()
    const [row] = await next`select current_user as u, current_setting('request.jwt.claims', true) as c`
    expect(row).toEqual({ u: 'postgres', c: '' })
    await next.end()
  })
})

describe('clients that connect and never give the password', () => {
  /** A socket to the database port that sends nothing (or only its startup packet), and when it was closed. */
  function silent(startup: boolean) {
    const url = new URL(embedded.url)
    const socket = connect(Number(url.port), url.hostname)
    const closed = new Promise<number>((resolve) => socket.on('close', () => resolve(performance.now())))
    socket.on('error', () => {})
    socket.resume() // what the server sends is read (and dropped), so that its end is seen
    if (startup) socket.on('connect', () => socket.write(startupPacket({ user: 'postgres', database: 'postgres' })))
    return { socket, closed }
  }

  it('do not take the slots of clients that have it: psql still connects past eight of them', async () => {
    // eight silent sockets and three at the password prompt: every slot (maxConnections 8) before
    const held = [...Array.from({ length: 8 }, () => silent(false)), ...Array.from({ length: 3 }, () => silent(true))]
    await Promise.all(held.map((h) => new Promise((resolve) => h.socket.once('connect', resolve))))
    try {
      const psql = other()
      expect((await psql`select 1 as one`)[0]).toEqual({ one: 1 })
      await psql.end()
      await serviceWorks()
    } finally {
      for (const h of held) h.socket.destroy()
    }
  })

  it('are disconnected when they have not authenticated within the timeout', async () => {
    const started = performance.now()
    const [quiet, prompted] = [silent(false), silent(true)]
    const closedAt = await Promise.all([quiet.closed, prompted.closed])
    for (const at of closedAt) expect(at - started).toBeGreaterThanOrEqual(AUTHENTICATION_TIMEOUT_MS - 50)
  })

  it('past MAX_UNAUTHENTICATED waiting at once, the one that waited longest goes first', async () => {
    const first = silent(false)
    await new Promise((resolve) => first.socket.once('connect', resolve))
    const rest = Array.from({ length: MAX_UNAUTHENTICATED }, () => silent(false))
    const firstClosed = await first.closed
    const started = performance.now()
    try {
      // the newcomers were not the ones let go
      expect(firstClosed).toBeLessThan(started)
      expect(rest.every((r) => !r.socket.destroyed)).toBe(true)
    } finally {
      for (const r of rest) r.socket.destroy()
    }
  })
})

describe('/health', () => {
  it('reports degraded (503) when the service cannot run a query as its own roles', async () => {
    await app`alter role service_role rename to service_role_away`
    try {
      const res = await t.request('/health')
      expect(res.status).toBe(503)
      expect(await json(res)).toMatchObject({ status: 'degraded', database: { reachable: true, roles: false } })
    } finally {
      await app`alter role service_role_away rename to service_role`
    }
    expect((await t.request('/health')).status).toBe(200)
  })
})

// ---- a raw protocol client, for what postgres.js never sends

function cstr(s: string): Buffer {
  return Buffer.from(`${s}\0`)
}
function msg(type: string, ...parts: Buffer[]): Buffer {
  const body = Buffer.concat(parts)
  const header = Buffer.alloc(5)
  header.write(type, 0, 'latin1')
  header.writeInt32BE(body.length + 4, 1)
  return Buffer.concat([header, body])
}

/** A StartupMessage of protocol 3.0 with these parameters. */
function startupPacket(params: Record<string, string>): Buffer {
  const body = Buffer.concat([...Object.entries(params).flatMap(([k, v]) => [cstr(k), cstr(v)]), Buffer.from([0])])
  const head = Buffer.alloc(8)
  head.writeInt32BE(8 + body.length, 0)
  head.writeInt32BE(196608, 4)
  return Buffer.concat([head, body])
}

async function rawClient() {
  const url = new URL(embedded.url)
  const socket: Socket = connect(Number(url.port), url.hostname)
  let received = Buffer.alloc(0)
  let waiting: (() => void) | null = null
  socket.on('data', (d) => {
    received = Buffer.concat([received, d])
    waiting?.()
  })
  await new Promise((r) => socket.once('connect', r))
  /** Everything up to the next ReadyForQuery. */
  const untilReady = async (): Promise<string> => {
    for (;;) {
      const at = received.indexOf(Buffer.from([0x5a, 0, 0, 0, 5]))
      if (at >= 0 && received.length >= at + 6) {
        const text = received.subarray(0, at + 6).toString('latin1')
        received = received.subarray(at + 6)
        return text
      }
      await new Promise<void>((r) => (waiting = r))
    }
  }
  socket.write(startupPacket({ user: 'postgres', database: 'postgres' }))
  // AuthenticationCleartextPassword (R, length 8, code 3), answered with the URL's password
  for (;;) {
    if (received.length >= 9) break
    await new Promise<void>((r) => (waiting = r))
  }
  expect([...received.subarray(0, 9)]).toEqual([0x52, 0, 0, 0, 8, 0, 0, 0, 3])
  received = received.subarray(9)
  socket.write(msg('p', cstr(decodeURIComponent(url.password))))
  await untilReady()
  return {
    socket,
    async parse(name: string, sql: string) {
      socket.write(Buffer.concat([msg('P', cstr(name), cstr(sql), Buffer.alloc(2)), msg('S')]))
      const out = await untilReady()
      expect(out).not.toContain('SERROR')
    },
    async executeNamed(name: string): Promise<string> {
      socket.write(
        Buffer.concat([msg('B', cstr(''), cstr(name), Buffer.alloc(6)), msg('D', Buffer.from('P'), cstr('')), msg('E', cstr(''), Buffer.alloc(4)), msg('S')]),
      )
      return untilReady()
    },
  }
}

// (a condition, not a time: 20 s is only the bound a loaded 2-core machine may need to reach it)
async function waitFor(check: () => Promise<boolean>, timeoutMs = 20_000) {
  const until = Date.now() + timeoutMs
  while (!(await check())) {
    if (Date.now() > until) throw new Error('condition not met in time')
    await new Promise((r) => setTimeout(r, 10))
  }
}
