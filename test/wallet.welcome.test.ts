// The welcome bonus's per-address daily allowance: one address making accounts by the dozen gets
// WELCOME_BONUS_DAILY_PER_ADDRESS bonuses a UTC day; the others are withheld, not lost, and granted
// once by a later fetch from an address with room.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createTestDatabase, type TestDatabase } from './helpers/db.ts'
import { createTestApp, json, type TestApp } from './helpers/app.ts'
import { bearer } from './helpers/tokens.ts'
import { createUser, type TestUser } from './helpers/users.ts'
import { apiKey } from '../functions-shared/lib/keys.ts'
import { LOCAL_JWT_SECRET } from '../functions-shared/config.ts'

let db: TestDatabase
let t: TestApp

beforeAll(async () => {
  db = await createTestDatabase({ poolMax: 6 })
  t = createTestApp({
    sql: db.sql,
    env: { WELCOME_BONUS_DAILY_PER_ADDRESS: '3', RATE_LIMIT_WALLET_PER_MINUTE: '1000', RATE_LIMIT_CHAT_PER_MINUTE: '1000' },
    deps: { remoteAddress: (c) => c.req.header('x-test-peer') ?? '198.51.100.1' },
  })
})
afterAll(async () => db?.close())

const balance = async (user: TestUser, peer: string) => {
  const res = await t.request('/wallet/balance', { headers: { ...bearer(user.token), 'x-test-peer': peer } })
  expect(res.status).toBe(200)
  return json(res)
}
const bonuses = async (userId: string) =>
  (await db.sql<
    { n: number; sum: number }[]
  >`select count(*)::int as n, coalesce(sum(delta), 0)::int as sum from public.token_ledger where user_id = ${userId} and reason = 'welcome_bonus'`)[0]!
const users = (n: number) => Promise.all(Array.from({ length: n }, () => createUser(db.sql)))

describe('the welcome bonus per client address and day', () => {
  it('grants 3 of 6 first fetches racing from one address and withholds the others, with no ledger row', async () => {
    const six = await users(6)
    const bodies = await Promise.all(six.map((u) => balance(u, '192.0.2.10')))
    const granted = bodies.filter((b) => b.token_balance === 50)
    const withheld = bodies.filter((b) => b.token_balance === 0)
    expect(granted).toHaveLength(3)
    expect(withheld).toHaveLength(3)
    for (const b of granted) expect(b.welcome_bonus_withheld).toBe(false)
    for (const b of withheld) expect(b.welcome_bonus_withheld).toBe(true)
    const rows = await Promise.all(six.map((u) => bonuses(u.id)))
    expect(rows.map((r) => r.n).sort()).toEqual([0, 0, 0, 1, 1, 1])
    // a fetch again from the address that is out of room changes nothing
    for (const b of withheld) {
      const again = await balance(six.find((u) => u.id === b.user_id)!, '192.0.2.10')
      expect(again).toMatchObject({ token_balance: 0, welcome_bonus_withheld: true })
    }
  })

  it('grants a withheld bonus once, from an address with room, however many fetches race for it', async () => {
    const [a, b, c, d] = await users(4)
    for (const u of [a!, b!, c!]) await balance(u, '192.0.2.20')
    expect(await balance(d!, '192.0.2.20')).toMatchObject({ token_balance: 0, welcome_bonus_withheld: true })
    const raced = await Promise.all(Array.from({ length: 5 }, () => balance(d!, '192.0.2.21')))
    expect(raced.some((r) => r.token_balance === 50)).toBe(true)
    expect(await balance(d!, '192.0.2.21')).toMatchObject({ token_balance: 50, welcome_bonus_withheld: false })
    expect(await bonuses(d!.id)).toEqual({ n: 1, sum: 50 })
    // the grant took one of the new address's three
    const [e, f, g] = await users(3)
    expect((await Promise.all([e!, f!, g!].map((u) => balance(u, '192.0.2.21')))).map((r) => r.token_balance).sort()).toEqual([0, 50, 50])
  })

  it('counts an IPv6 client by its /64, and loopback as one client', async () => {
    const v6 = await users(4)
    const peers = ['2001:db8:1:2::a', '2001:db8:1:2::b', '2001:db8:1:2:ffff::1', '2001:db8:1:2::c']
    const v6Bodies = await Promise.all(v6.map((u, i) => balance(u, peers[i]!)))
    expect(v6Bodies.map((r) => r.token_balance).sort()).toEqual([0, 50, 50, 50])
    const local = await users(4)
    const localBodies = await Promise.all(local.map((u, i) => balance(u, i % 2 ? '127.0.0.1' : `127.0.0.${i + 2}`)))
    expect(localBodies.map((r) => r.token_balance).sort()).toEqual([0, 50, 50, 50])
  })

  it('withholds the bonus of a wallet a first chat turn makes past the cap: the turn is refused with 402 and nothing is charged', async () => {
    const five = await users(4)
    for (const u of five.slice(0, 3)) await balance(u, '192.0.2.30')
    const late = five[3]!
    const res = await t.request('/chat', {
      method: 'POST',
      headers: { ...bearer(late.token), 'content-type': 'application/json', 'x-test-peer': '192.0.2.30' },
      body: JSON.stringify({ stream: false, message: 'Comment résoudre une équation ?', subject: 'mathematiques' }),
    })
    expect(res.status).toBe(402)
    expect(await json(res)).toMatchObject({ error: 'insufficient_balance', request_id: res.headers.get('x-request-id') })
    expect(await balance(late, '192.0.2.31')).toMatchObject({ token_balance: 50, welcome_bonus_withheld: false })
    expect(await bonuses(late.id)).toEqual({ n: 1, sum: 50 })
  })

  it('does not count an admin top-up that makes the wallet, nor any fetch when the cap is 0', async () => {
    const service = bearer(await apiKey(LOCAL_JWT_SECRET, 'service_role'))
    const [u] = await users(1)
    for (let i = 0; i < 4; i++) {
      const res = await t.request('/wallet/topup', {
        method: 'POST',
        headers: { ...service, 'content-type': 'application/json', 'x-test-peer': '192.0.2.40' },
        body: JSON.stringify({ user_id: (await users(1))[0]!.id, tokens: 10, amount: 25, currency: 'MRU', payment_method: 'cash' }),
      })
      expect(res.status).toBe(201)
      expect((await json(res)).new_balance).toBe(60)
    }
    expect((await balance(u!, '192.0.2.40')).token_balance).toBe(50)
    const open = createTestApp({
      sql: db.sql,
      env: { WELCOME_BONUS_DAILY_PER_ADDRESS: '0', RATE_LIMIT_WALLET_PER_MINUTE: '1000' },
      deps: { remoteAddress: () => '192.0.2.50' },
    })
    const many = await users(5)
    const bodies = await Promise.all(many.map(async (m) => json(await open.request('/wallet/balance', { headers: bearer(m.token) }))))
    expect(bodies.map((b) => b.token_balance)).toEqual([50, 50, 50, 50, 50])
  })
})
