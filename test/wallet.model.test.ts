// Model-based property test: random sequences of reserve, finalize, expire and top-up for several users,
// against a model of the rules; after every step: no negative balance, balance = Σ ledger deltas, and
// conservation (tokens in = balances + tokens charged + tokens held).
import fc from 'fast-check'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createTestDatabase, type TestDatabase } from './helpers/db.ts'
import { createTestApp, type TestApp } from './helpers/app.ts'
import { createUser } from './helpers/users.ts'
import { getBalance, topUp } from '../functions-shared/wallet/service.ts'
import { expireReservations, finalize, reserve } from '../functions-shared/wallet/reservations.ts'
import type { DomainError } from '../functions-shared/domain/errors.ts'

let db: TestDatabase
let t: TestApp
beforeAll(async () => {
  db = await createTestDatabase()
  t = createTestApp({ sql: db.sql })
})
afterAll(async () => db?.close())

const USERS = 3
interface Model {
  balance: number[]
  tokensIn: number[]
  charged: number[]
  reservations: { user: number; estimate: number; status: 'reserved' | 'finalized' | 'expired'; id: string }[]
}
interface Real {
  users: string[]
}
const ctx = () => ({ deps: t.deps, requestId: 'model' })

async function checkInvariants(m: Model, r: Real) {
  for (let u = 0; u < USERS; u++) {
    const id = r.users[u]!
    const [row] = await db.sql`select w.token_balance::int as balance,
      (select coalesce(sum(delta), 0)::int from public.token_ledger l where l.user_id = w.user_id) as ledger,
      (select coalesce(sum(delta), 0)::int from public.token_ledger l where l.user_id = w.user_id and reason in ('welcome_bonus', 'topup')) as tokens_in,
      (select coalesce(-sum(delta), 0)::int from public.token_ledger l where l.user_id = w.user_id and reason = 'agent_chat') as charged,
      (select coalesce(sum(estimated), 0)::int from public.reservations x where x.user_id = w.user_id and status = 'reserved') as held
      from public.wallets w where w.user_id = ${id}`
    expect(row!.balance).toBeGreaterThanOrEqual(0)
    expect(row!.balance).toBe(m.balance[u])
    expect(row!.ledger).toBe(row!.balance)
    expect(row!.tokens_in).toBe(row!.balance + row!.charged + row!.held)
    expect(row!.tokens_in).toBe(m.tokensIn[u])
    expect(row!.charged).toBe(m.charged[u])
  }
}

class Reserve implements fc.AsyncCommand<Model, Real> {
  readonly user: number
  readonly estimate: number
  constructor(user: number, estimate: number) {
    this.user = user
    this.estimate = estimate
  }
  check = () => true
  async run(m: Model, r: Real) {
    const result = await reserve({ ctx: ctx(), input: { user_id: r.users[this.user]!, estimate: this.estimate } }).catch((e: DomainError) => e)
    if (m.balance[this.user]! >= this.estimate) {
      expect(result).toHaveProperty('status', 'reserved')
      m.balance[this.user]! -= this.estimate
      m.reservations.push({ user: this.user, estimate: this.estimate, status: 'reserved', id: (result as { id: string }).id })
    } else {
      expect((result as DomainError).code).toBe('insufficient_balance')
    }
    await checkInvariants(m, r)
  }
  toString = () => `reserve(u${this.user}, ${this.estimate})`
}

class Finalize implements fc.AsyncCommand<Model, Real> {
  readonly pick: number
  readonly actual: number
  constructor(pick: number, actual: number) {
    this.pick = pick
    this.actual = actual
  }
  check = (m: Readonly<Model>) => m.reservations.length > 0
  async run(m: Model, r: Real) {
    const res = m.reservations[this.pick % m.reservations.length]!
    const result = await finalize({ ctx: ctx(), input: { reservation_id: res.id, actual: this.actual } }).catch((e: DomainError) => e)
    if (res.status === 'reserved') {
      const available = m.balance[res.user]! + res.estimate
      const charge = Math.min(this.actual, 2 * res.estimate, available)
      expect(result).toMatchObject({ charged: charge })
      m.balance[res.user] = available - charge
      m.charged[res.user]! += charge
      res.status = 'finalized'
    } else {
      expect((result as DomainError).code).toBe('conflict')
    }
    await checkInvariants(m, r)
  }
  toString = () => `finalize(#${this.pick}, ${this.actual})`
}

class Expire implements fc.AsyncCommand<Model, Real> {
  check = () => true
  async run(m: Model, r: Real) {
    await expireReservations({ ctx: ctx(), now: new Date(Date.now() + 6 * 60_000) })
    for (const res of m.reservations) {
      if (res.status !== 'reserved') continue
      res.status = 'expired'
      m.balance[res.user]! += res.estimate
    }
    await checkInvariants(m, r)
  }
  toString = () => 'expire()'
}

class TopUp implements fc.AsyncCommand<Model, Real> {
  readonly user: number
  readonly tokens: number
  constructor(user: number, tokens: number) {
    this.user = user
    this.tokens = tokens
  }
  check = () => true
  async run(m: Model, r: Real) {
    const result = await topUp({
      ctx: ctx(),
      principal: { kind: 'admin_key' },
      input: { user_id: r.users[this.user]!, tokens: this.tokens, amount: this.tokens, currency: 'MRU', payment_method: 'cash' },
    })
    m.balance[this.user]! += this.tokens
    m.tokensIn[this.user]! += this.tokens
    expect(result.new_balance).toBe(m.balance[this.user])
    await checkInvariants(m, r)
  }
  toString = () => `topUp(u${this.user}, ${this.tokens})`
}

const user = fc.integer({ min: 0, max: USERS - 1 })
const commands = fc.commands(
  [
    fc.tuple(user, fc.integer({ min: 1, max: 40 })).map(([u, e]) => new Reserve(u, e)),
    fc.tuple(fc.nat(), fc.integer({ min: 0, max: 90 })).map(([p, a]) => new Finalize(p, a)),
    fc.constant(new Expire()),
    fc.tuple(user, fc.integer({ min: 1, max: 60 })).map(([u, n]) => new TopUp(u, n)),
  ],
  { maxCommands: 25 },
)

describe('the wallet against its model', () => {
  it('keeps balances, the ledger equation and conservation true after every step', async () => {
    await fc.assert(
      fc.asyncProperty(commands, async (cmds) => {
        const users = await Promise.all(Array.from({ length: USERS }, () => createUser(db.sql)))
        for (const u of users) await getBalance({ ctx: ctx(), userId: u.id }) // the welcome bonus
        const model: Model = { balance: users.map(() => 50), tokensIn: users.map(() => 50), charged: users.map(() => 0), reservations: [] }
        await fc.asyncModelRun(() => ({ model, real: { users: users.map((u) => u.id) } }), cmds)
      }),
      { numRuns: 40, seed: Number(process.env.FC_SEED ?? Date.now() % 2 ** 31), verbose: 1 },
    )
  }, 120_000)
})
