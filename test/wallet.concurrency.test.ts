// Money under concurrency. On a PostgreSQL server (TEST_DATABASE_URL) the calls really race on a pool;
// on PGlite the same assertions hold with the calls queued on its one connection.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createTestDatabase, type TestDatabase } from './helpers/db.ts'
import { createTestApp, type TestApp } from './helpers/app.ts'
import { createUser } from './helpers/users.ts'
import { getBalance, topUp } from '../functions-shared/wallet/service.ts'
import { expireReservations, finalize, reserve } from '../functions-shared/wallet/reservations.ts'
import { createDeps } from '../functions-shared/deps.ts'
import type { DomainError } from '../functions-shared/domain/errors.ts'

let db: TestDatabase
let t: TestApp
beforeAll(async () => {
  db = await createTestDatabase()
  t = createTestApp({ sql: db.sql })
})
afterAll(async () => db?.close())

/** A context whose queries run on a pool of `n` connections (real parallelism on a server). */
function pooled(n: number) {
  const deps = createDeps(t.deps.config, { sql: db.connect(n), logs: t.deps.logs, metrics: t.deps.metrics })
  return { deps, requestId: 'race' }
}
const ledgerSum = async (userId: string) =>
  Number((await db.sql`select coalesce(sum(delta), 0)::bigint as s from public.token_ledger where user_id = ${userId}`)[0]!.s)
const balanceOf = async (userId: string) => Number((await db.sql`select token_balance from public.wallets where user_id = ${userId}`)[0]!.token_balance)

describe('wallet races', () => {
  it('50 parallel reserves of 7 against a balance of 100: exactly 14 succeed, the balance is 2', async () => {
    const user = await createUser(db.sql)
    const ctx = pooled(20)
    await topUp({
      ctx,
      principal: { kind: 'service', token: '' },
      input: { user_id: user.id, tokens: 50, amount: 100, currency: 'MRU', payment_method: 'cash' },
    })
    expect(await balanceOf(user.id)).toBe(100) // 50 bonus + 50
    const results = await Promise.allSettled(Array.from({ length: 50 }, () => reserve({ ctx, input: { user_id: user.id, estimate: 7 } })))
    const ok = results.filter((r) => r.status === 'fulfilled')
    const refused = results.filter((r): r is PromiseRejectedResult => r.status === 'rejected')
    expect(ok).toHaveLength(14)
    expect(refused.every((r) => (r.reason as DomainError).code === 'insufficient_balance')).toBe(true)
    expect(await balanceOf(user.id)).toBe(2)
    expect(await ledgerSum(user.id)).toBe(2)
  })

  it('20 racing first fetches grant the welcome bonus once', async () => {
    const user = await createUser(db.sql)
    const ctx = pooled(20)
    const balances = await Promise.all(Array.from({ length: 20 }, () => getBalance({ ctx, userId: user.id })))
    expect(new Set(balances.map((b) => b.token_balance))).toEqual(new Set([50]))
    const [row] = await db.sql`select count(*)::int as n from public.token_ledger where user_id = ${user.id} and reason = 'welcome_bonus'`
    expect(row!.n).toBe(1)
  })

  it('a finalize racing the expiry: exactly one wins, one refund at most', async () => {
    for (let round = 0; round < 10; round++) {
      const user = await createUser(db.sql)
      const ctx = pooled(4)
      const r = await reserve({ ctx, input: { user_id: user.id, estimate: 10 } })
      // the expiry sees the reservation as due (a moved clock); the finalize sees it as live
      const [fin, exp] = await Promise.allSettled([
        finalize({ ctx, input: { reservation_id: r.id, actual: 4 } }),
        expireReservations({ ctx, now: new Date(Date.now() + 6 * 60_000) }),
      ])
      const finalized = fin.status === 'fulfilled'
      // the expiry is global: it also expires the holds an earlier test of this file left due, so its
      // count says nothing of this round's; the reservation's own status does
      const [{ status }] = await db.sql<[{ status: string }]>`select status from public.reservations where id = ${r.id}`
      const expired = exp.status === 'fulfilled' && status === 'expired'
      expect(finalized !== expired, `round ${round}: finalized=${finalized} expired=${expired} (${status})`).toBe(true)
      expect(status).toBe(finalized ? 'finalized' : 'expired')
      if (!finalized) expect((fin as PromiseRejectedResult).reason.code).toBe('conflict')
      expect(await balanceOf(user.id)).toBe(finalized ? 46 : 50)
      expect(await ledgerSum(user.id)).toBe(await balanceOf(user.id))
    }
  })

  it('the same top-up idempotency key sent 5 times in parallel makes one transaction', async () => {
    const user = await createUser(db.sql)
    const ctx = pooled(5)
    const key = `topup-${crypto.randomUUID()}`
    const input = { user_id: user.id, tokens: 200, amount: 500, currency: 'MRU' as const, payment_method: 'bankily' as const, reference: 'BKL-778' }
    const results = await Promise.all(Array.from({ length: 5 }, () => topUp({ ctx, principal: { kind: 'admin_key' }, input, idempotencyKey: key })))
    expect(new Set(results.map((r) => r.transaction_id)).size).toBe(1)
    expect(results.filter((r) => !r.replayed)).toHaveLength(1)
    expect(new Set(results.map((r) => r.new_balance))).toEqual(new Set([250]))
    const [row] = await db.sql`select count(*)::int as n from public.financial_transactions where idempotency_key = ${key}`
    expect(row!.n).toBe(1)
    expect(await balanceOf(user.id)).toBe(250)
    const mismatch = await topUp({ ctx, principal: { kind: 'admin_key' }, input: { ...input, tokens: 201 }, idempotencyKey: key }).catch((e: DomainError) => e)
    expect((mismatch as DomainError).code).toBe('idempotency_key_reused')
  })
})
