import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createTestDatabase, type TestDatabase } from './helpers/db.ts'
import { createTestApp, json, type TestApp } from './helpers/app.ts'
import { bearer } from './helpers/tokens.ts'
import { createUser, type TestUser } from './helpers/users.ts'
import { apiKey } from '../functions-shared/lib/keys.ts'
import { LOCAL_JWT_SECRET } from '../functions-shared/config.ts'

let db: TestDatabase
let t: TestApp
let service: Record<string, string>
let student: TestUser

beforeAll(async () => {
  db = await createTestDatabase()
  t = createTestApp({ sql: db.sql, env: { RATE_LIMIT_WALLET_PER_MINUTE: '1000' } })
  service = bearer(await apiKey(LOCAL_JWT_SECRET, 'service_role'))
  student = await createUser(db.sql, { fullName: 'Zeinebou' })
})
afterAll(async () => db?.close())

const call = async (method: string, path: string, body?: unknown, headers: Record<string, string> = {}) => {
  const res = await t.request(path, {
    method,
    headers: { 'content-type': 'application/json', ...headers },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  })
  return { status: res.status, headers: res.headers, body: await json(res) }
}
const topupBody = (userId: string, extra: Record<string, unknown> = {}) => ({
  user_id: userId,
  tokens: 100,
  amount: 250,
  currency: 'MRU',
  payment_method: 'masrvi',
  reference: 'MSV-1',
  ...extra,
})

describe('GET /wallet/ledger', () => {
  it("lists the caller's own movements, newest first, adding up to the balance", async () => {
    const [a, b] = [await createUser(db.sql), await createUser(db.sql)]
    await call('GET', '/wallet/balance', undefined, bearer(b.token))
    expect((await call('POST', '/wallet/topup', topupBody(a.id), service)).status).toBe(201)
    const [r] = await db.sql`select * from public.reserve_tokens(${a.id}, 7, 'ledger-test', 300, 50)`
    await db.sql`select * from public.finalize_reservation(${r!.id}, 4, 'ledger-test', 'manual', 2)`
    const res = await call('GET', '/wallet/ledger?limit=2', undefined, bearer(a.token))
    expect(res.status).toBe(200)
    expect(res.body.total).toBe(5)
    expect(res.body.items.map((e: { reason: string; delta: number }) => [e.reason, e.delta])).toEqual([['agent_chat', -4], ['reservation_release', 7]])
    const all = (await call('GET', '/wallet/ledger', undefined, bearer(a.token))).body.items as { delta: number; balance_after: number; reason: string }[]
    expect(all.map((e) => e.reason)).toEqual(['agent_chat', 'reservation_release', 'reservation_hold', 'topup', 'welcome_bonus'])
    expect(all.reduce((sum, e) => sum + e.delta, 0)).toBe(146)
    expect(all[0]!.balance_after).toBe(146)
    // b sees only b's bonus
    const other = await call('GET', '/wallet/ledger', undefined, bearer(b.token))
    expect(other.body.items.map((e: { reason: string }) => e.reason)).toEqual(['welcome_bonus'])
    expect((await call('GET', '/wallet/ledger', undefined, service)).status).toBe(403)
  })
})

describe('GET /wallet/balance', () => {
  it('creates the wallet with the welcome bonus on the first fetch, and reports tier, holds and limits', async () => {
    const res = await call('GET', '/wallet/balance', undefined, bearer(student.token))
    expect(res.status).toBe(200)
    expect(res.body).toEqual({
      user_id: student.id,
      token_balance: 50,
      subscription_tier: 'free',
      pending_reservations: { count: 0, tokens: 0 },
      welcome_bonus_withheld: false,
      limits: { max_tokens_per_request: 500, daily_limit: 50, turns_today: 0, top_k: 10, rerank_n: 3 },
    })
    expect((await call('GET', '/wallet/balance', undefined, bearer(student.token))).body.token_balance).toBe(50)
  })

  it('reports pending reservations, and expires stale ones before answering', async () => {
    const u = await createUser(db.sql)
    const r = await call('POST', '/wallet/internal/reserve', { user_id: u.id, estimate: 12 }, service)
    expect(r.status).toBe(201)
    expect((await call('GET', '/wallet/balance', undefined, bearer(u.token))).body).toMatchObject({
      token_balance: 38,
      pending_reservations: { count: 1, tokens: 12 },
    })
    await db.sql`update public.reservations set expires_at = now() - interval '1 second' where id = ${r.body.id}`
    expect((await call('GET', '/wallet/balance', undefined, bearer(u.token))).body).toMatchObject({
      token_balance: 50,
      pending_reservations: { count: 0, tokens: 0 },
    })
  })

  it('needs a user token', async () => {
    expect((await call('GET', '/wallet/balance')).status).toBe(401)
    expect((await call('GET', '/wallet/balance', undefined, service)).status).toBe(403)
  })

  it('answers 401 to a token that outlived its account, with or without a wallet, and creates none', async () => {
    for (const fetchedBefore of [true, false]) {
      const gone = await createUser(db.sql)
      if (fetchedBefore) expect((await call('GET', '/wallet/balance', undefined, bearer(gone.token))).status).toBe(200)
      await db.sql`delete from auth.users where id = ${gone.id}`
      const res = await call('GET', '/wallet/balance', undefined, bearer(gone.token))
      expect(res.status, `fetched before: ${fetchedBefore}`).toBe(401)
      expect(res.body).toMatchObject({
        error: 'unauthorized',
        message: 'The account of this token no longer exists; sign in again',
        request_id: res.headers.get('x-request-id'),
      })
      expect(await db.sql`select count(*)::int as n from public.wallets where user_id = ${gone.id}`).toEqual([{ n: 0 }])
    }
  })
})

describe('GET /wallet/reservations', () => {
  it("lists only the caller's own reservations, filtered by status", async () => {
    const [a, b] = [await createUser(db.sql), await createUser(db.sql)]
    const ra = await call('POST', '/wallet/internal/reserve', { user_id: a.id, estimate: 5 }, service)
    await call('POST', '/wallet/internal/reserve', { user_id: a.id, estimate: 6 }, service)
    await call('POST', '/wallet/internal/reserve', { user_id: b.id, estimate: 7 }, service)
    await call('POST', '/wallet/internal/finalize', { reservation_id: ra.body.id, actual: 3 }, service)
    const all = await call('GET', '/wallet/reservations', undefined, bearer(a.token))
    expect(all.body.total).toBe(2)
    expect(all.body.items.every((r: { user_id: string }) => r.user_id === a.id)).toBe(true)
    const reserved = await call('GET', '/wallet/reservations?status=reserved', undefined, bearer(a.token))
    expect(reserved.body.items.map((r: { estimated: number }) => r.estimated)).toEqual([6])
    const finalized = await call('GET', '/wallet/reservations?status=finalized', undefined, bearer(a.token))
    expect(finalized.body.items[0]).toMatchObject({ estimated: 5, actual: 3, charged: 3, status: 'finalized' })
    expect((await call('GET', '/wallet/reservations?status=paid', undefined, bearer(a.token))).status).toBe(400)
  })

  it('shows a reservation past its TTL as expired, refunded, without waiting for the job', async () => {
    const u = await createUser(db.sql)
    const r = await call('POST', '/wallet/internal/reserve', { user_id: u.id, estimate: 9 }, service)
    await db.sql`update public.reservations set expires_at = now() - interval '1 second' where id = ${r.body.id}`
    const list = await call('GET', '/wallet/reservations', undefined, bearer(u.token))
    expect(list.body.items).toEqual([expect.objectContaining({ id: r.body.id, status: 'expired' })])
    const [w] = await db.sql`select token_balance from public.wallets where user_id = ${u.id}`
    expect(Number(w!.token_balance)).toBe(50)
  })
})

describe('POST /wallet/topup', () => {
  it('credits the wallet, writes the ledger and a credit/topup transaction', async () => {
    const u = await createUser(db.sql)
    const res = await call('POST', '/wallet/topup', topupBody(u.id), service)
    expect(res.status).toBe(201)
    expect(res.body).toMatchObject({
      user_id: u.id,
      tokens: 100,
      new_balance: 150,
      amount: 250,
      currency: 'MRU',
      payment_method: 'masrvi',
      direction: 'credit',
      type: 'topup',
      replayed: false,
    })
    const [ledger] = await db.sql`select delta, reason from public.token_ledger where id = ${res.body.ledger_entry_id}`
    expect(ledger).toEqual({ delta: '100', reason: 'topup' })
    const list = await call('GET', `/wallet/transactions?user_id=${u.id}`, undefined, service)
    expect(list.body.items).toEqual([
      expect.objectContaining({ id: res.body.transaction_id, direction: 'credit', type: 'topup', tokens: 100, created_by: 'service_role', reference: 'MSV-1' }),
    ])
  })

  it('replays the first answer for a repeated Idempotency-Key and refuses it with another body (422)', async () => {
    const u = await createUser(db.sql)
    const key = { 'Idempotency-Key': `k-${crypto.randomUUID()}` }
    const first = await call('POST', '/wallet/topup', topupBody(u.id), { ...service, ...key })
    const again = await call('POST', '/wallet/topup', topupBody(u.id), { ...service, ...key })
    expect(again.body).toEqual({ ...first.body, replayed: true })
    expect(again.headers.get('idempotent-replayed')).toBe('true')
    // the same user id in capitals is the same request: a replay, not a 422
    const upper = await call('POST', '/wallet/topup', topupBody(u.id.toUpperCase()), { ...service, ...key })
    expect(upper.body).toEqual({ ...first.body, replayed: true })
    const other = await call('POST', '/wallet/topup', topupBody(u.id, { tokens: 999 }), { ...service, ...key })
    expect(other).toMatchObject({ status: 422, body: { error: 'idempotency_key_reused' } })
    expect((await call('GET', '/wallet/balance', undefined, bearer(u.token))).body.token_balance).toBe(150)
  })

  it("keeps each caller's Idempotency-Keys apart: two admins with one key make two top-ups", async () => {
    const u = await createUser(db.sql)
    const [a, b] = [await createUser(db.sql, { role: 'admin' }), await createUser(db.sql, { role: 'admin' })]
    const key = { 'Idempotency-Key': `receipt-${crypto.randomUUID()}` }
    const first = await call('POST', '/wallet/topup', topupBody(u.id), { ...bearer(a.token), ...key })
    const second = await call('POST', '/wallet/topup', topupBody(u.id), { ...bearer(b.token), ...key })
    expect([first.status, second.status]).toEqual([201, 201])
    expect([first.body.replayed, second.body.replayed]).toEqual([false, false])
    expect(second.body.transaction_id).not.toBe(first.body.transaction_id)
    // another body under the same key is b's own request, not a reuse of a's key; a replays its own
    const third = await call('POST', '/wallet/topup', topupBody(u.id, { tokens: 5 }), { ...bearer(b.token), 'Idempotency-Key': `${key['Idempotency-Key']}-b` })
    expect(third.status).toBe(201)
    const again = await call('POST', '/wallet/topup', topupBody(u.id), { ...bearer(a.token), ...key })
    expect(again.body).toEqual({ ...first.body, replayed: true })
    const other = await call('POST', '/wallet/topup', topupBody(u.id, { tokens: 7 }), { ...bearer(b.token), ...key })
    expect(other).toMatchObject({ status: 422, body: { error: 'idempotency_key_reused' } })
    expect((await call('GET', '/wallet/balance', undefined, bearer(u.token))).body.token_balance).toBe(50 + 100 + 100 + 5)
    const rows = await db.sql`select created_by from public.financial_transactions where idempotency_key = ${key['Idempotency-Key']} order by created_at`
    expect(rows.map((r) => r.created_by)).toEqual([a.id, b.id])
  })

  it('refuses bad input with 400 and the fields, and unknown users with 404', async () => {
    const u = await createUser(db.sql)
    const cases: [Record<string, unknown>, string][] = [
      [{ tokens: 0 }, 'tokens'],
      [{ tokens: 1.5 }, 'tokens'],
      [{ tokens: -5 }, 'tokens'],
      [{ amount: -1 }, 'amount'],
      [{ amount: 1.234 }, 'amount'],
      // two decimals exactly, not within floating-point error of them
      [{ amount: 0.30000000000000004 }, 'amount'],
      [{ amount: 5e-324 }, 'amount'],
      [{ amount: 99.99000000000001 }, 'amount'],
      [{ currency: 'XOF' }, 'currency'],
      [{ payment_method: 'paypal' }, 'payment_method'],
      [{ user_id: 'nope' }, 'user_id'],
    ]
    for (const [patch, field] of cases) {
      const res = await call('POST', '/wallet/topup', topupBody(u.id, patch), service)
      expect(res.status, JSON.stringify(patch)).toBe(400)
      expect(res.body.fields.map((f: { field: string }) => f.field)).toEqual([field])
    }
    expect((await call('POST', '/wallet/topup', topupBody(crypto.randomUUID()), service)).status).toBe(404)
  })

  it('is for admins only', async () => {
    expect((await call('POST', '/wallet/topup', topupBody(student.id), bearer(student.token))).status).toBe(403)
  })
})

describe('expenses and transactions', () => {
  it('logs a debit transaction without touching any wallet, and lists with filters', async () => {
    const res = await call('POST', '/wallet/transactions/expense', {
      type: 'api_cost',
      amount: 42.5,
      currency: 'USD',
      description: 'embeddings for 8 textbooks',
    }, service)
    expect(res.status).toBe(201)
    expect(res.body).toMatchObject({ direction: 'debit', type: 'api_cost', amount: 42.5, currency: 'USD', tokens: 0, user_id: null })
    const debits = await call('GET', '/wallet/transactions?direction=debit&type=api_cost', undefined, service)
    expect(debits.body.items.every((t: { direction: string; type: string }) => t.direction === 'debit' && t.type === 'api_cost')).toBe(true)
    expect(debits.body.total).toBeGreaterThanOrEqual(1)
    expect((await call('POST', '/wallet/transactions/expense', { type: 'topup', amount: 1, currency: 'USD', description: 'x' }, service)).status).toBe(400)
    expect((await call('POST', '/wallet/transactions/expense', { type: 'server_cost', amount: 0, currency: 'USD', description: 'x' }, service)).status).toBe(
      400,
    )
    // not even the smallest number above zero, which two decimals make 0.00
    expect((await call('POST', '/wallet/transactions/expense', { type: 'server_cost', amount: 5e-324, currency: 'USD', description: 'x' }, service)).status)
      .toBe(400)
    // amounts written with two decimals are taken as written
    for (const amount of [0.3, 1.15, 99.99, 1e11]) {
      const ok = await call('POST', '/wallet/transactions/expense', { type: 'server_cost', amount, currency: 'USD', description: 'x' }, service)
      expect(ok.status, String(amount)).toBe(201)
      expect(ok.body.amount).toBe(amount)
    }
    expect((await call('GET', '/wallet/transactions?direction=sideways', undefined, service)).status).toBe(400)
  })
})

describe('internal reserve and finalize', () => {
  it('reserve → 201; beyond the balance → 402 and nothing reserved; finalize → 200; twice → 409; unknown → 404', async () => {
    const u = await createUser(db.sql)
    const r = await call('POST', '/wallet/internal/reserve', { user_id: u.id, estimate: 30 }, service)
    expect(r).toMatchObject({ status: 201, body: { status: 'reserved', estimated: 30 } })
    const broke = await call('POST', '/wallet/internal/reserve', { user_id: u.id, estimate: 21 }, service)
    expect(broke).toMatchObject({ status: 402, body: { error: 'insufficient_balance', request_id: expect.any(String) } })
    const f = await call('POST', '/wallet/internal/finalize', { reservation_id: r.body.id, actual: 12 }, service)
    expect(f).toMatchObject({ status: 200, body: { charged: 12, refunded: 18, token_balance: 38 } })
    expect((await call('POST', '/wallet/internal/finalize', { reservation_id: r.body.id, actual: 12 }, service)).status).toBe(409)
    expect((await call('POST', '/wallet/internal/finalize', { reservation_id: crypto.randomUUID(), actual: 1 }, service)).status).toBe(404)
    expect((await call('POST', '/wallet/internal/reserve', { user_id: crypto.randomUUID(), estimate: 1 }, service)).status).toBe(404)
  })

  it('answers 404 when WALLET_INTERNAL_ROUTES is off', async () => {
    const prod = createTestApp({ sql: db.sql, env: { WALLET_INTERNAL_ROUTES: 'false' } })
    const res = await prod.request('/wallet/internal/reserve', {
      method: 'POST',
      headers: { ...service, 'content-type': 'application/json' },
      body: JSON.stringify({ user_id: student.id, estimate: 1 }),
    })
    expect(res.status).toBe(404)
  })
})

describe('wallet metrics', () => {
  it('counts tokens by movement and reservations by outcome', async () => {
    const text = await (await t.request('/metrics', { headers: service })).text()
    expect(text).toMatch(/wallet_tokens_total\{movement="reserved"\} \d+/)
    expect(text).toMatch(/wallet_tokens_total\{movement="charged"\} \d+/)
    expect(text).toMatch(/wallet_reservations_total\{outcome="insufficient"\} [1-9]/)
    expect(text).toMatch(/wallet_reservations_total\{outcome="conflict"\} [1-9]/)
  })
})

describe('wallet rate limit', () => {
  it('gives the 31st wallet request of a user within a minute a 429', async () => {
    const limited = createTestApp({ sql: db.sql })
    const u = await createUser(db.sql)
    for (let i = 0; i < 30; i++) expect((await limited.request('/wallet/balance', { headers: bearer(u.token) })).status).toBe(200)
    const res = await limited.request('/wallet/balance', { headers: bearer(u.token) })
    expect(res.status).toBe(429)
    expect(await json(res)).toMatchObject({ error: 'rate_limited', limit: 30, window: '1m' })
  })
})
