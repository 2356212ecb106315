// Turns that survive the network: a client that drops at any point of a turn resumes it (GET
// /chat/turns/{id} with Last-Event-ID) or retries it (the same Idempotency-Key) and rebuilds exactly the
// stored answer, charged once; the same key with another body is 422, keys are per user and last a day.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createTestDatabase, type TestDatabase } from './helpers/db.ts'
import { createUser } from './helpers/users.ts'
import { seedChatLessons } from './helpers/corpus.ts'
import { chatGateway, getTurn, moneyOf, post, storedAnswerOf } from './helpers/chat-turns.ts'
import { events, readSse, type SseItem } from './helpers/sse.ts'
import type { Gateway } from '../scripts/lib/gateway.ts'

type Event = Extract<SseItem, { kind: 'event' }>

let db: TestDatabase
const gateway = (ai: Parameters<typeof chatGateway>[1]) => chatGateway(db, ai)
const money = (userId: string) => moneyOf(db.sql, userId)
const storedAnswer = (turnId: string) => storedAnswerOf(db.sql, turnId)

beforeAll(async () => {
  db = await createTestDatabase({ poolMax: 8 })
  await seedChatLessons(db.sql)
})
afterAll(async () => db?.close())

describe('retries and drops', () => {
  let gw: Gateway
  beforeAll(async () => {
    gw = await gateway('offline')
  })
  afterAll(async () => gw?.close())

  it('a retried POST with the same Idempotency-Key is the same turn: replayed in JSON and SSE, one reservation; another body is 422', async () => {
    const student = await createUser(db.sql)
    // no stream field: the Accept header of each request decides
    const body = { message: 'Comment résoudre une équation du premier degré ?' }
    const key = { 'Idempotency-Key': crypto.randomUUID() }
    const [a, b] = await Promise.all([post(gw, student, body, key), post(gw, student, body, key)])
    const [ja, jb] = [await a.json(), await b.json()]
    expect(ja.turn_id).toBe(jb.turn_id)
    expect(jb.answer).toBe(ja.answer)
    expect([a.headers.get('idempotent-replayed'), b.headers.get('idempotent-replayed')].sort()).toEqual(['true', null].sort())
    const again = await (await post(gw, student, body, key)).json()
    expect(again).toMatchObject({ turn_id: ja.turn_id, answer: ja.answer, usage: ja.usage })
    // the same body asked as a stream: the same turn's events
    const streamed = events(await readSse(await post(gw, student, { ...body }, { ...key, accept: 'text/event-stream' })).rest())
    expect(streamed[0]!.data.turn_id).toBe(ja.turn_id)
    expect(streamed.filter((e) => e.event === 'delta').map((e) => e.data.text).join('')).toBe(ja.answer)
    const m = await money(student.id)
    expect(m).toMatchObject({ reservations: 1, usage: 1, balance: 50 - ja.usage.charged, ledger: 50 - ja.usage.charged })
    const reused = await post(gw, student, { ...body, message: 'Et une équation du second degré ?' }, key)
    expect(reused.status).toBe(422)
    expect(await reused.json()).toMatchObject({ error: 'idempotency_key_reused', request_id: reused.headers.get('x-request-id') })
    // keys are per user
    const other = await createUser(db.sql)
    const theirs = await (await post(gw, other, body, key)).json()
    expect(theirs.turn_id).not.toBe(ja.turn_id)
    // a refused turn frees its key: the retry after a top-up is a new turn
    const poor = await createUser(db.sql)
    await db.sql`select public.get_or_create_wallet(${poor.id}, 50)`
    await db.sql`update public.wallets set token_balance = 1 where user_id = ${poor.id}`
    const poorKey = { 'Idempotency-Key': 'retry-after-top-up' }
    expect((await post(gw, poor, body, poorKey)).status).toBe(402)
    await db.sql`update public.wallets set token_balance = 50 where user_id = ${poor.id}`
    expect((await post(gw, poor, body, poorKey)).status).toBe(200)
  })

  it("takes over a key whose request died before its turn began, and says a key's deleted conversation is gone", async () => {
    const student = await createUser(db.sql)
    const body = { message: 'Comment résoudre une équation du premier degré ?', stream: false }
    // a request that claimed its key, then its process died before the turn began
    await db.sql`select * from public.claim_chat_idempotency(${student.id}, 'orphan', 'some-hash', ${crypto.randomUUID()})`
    await db.sql`update public.chat_idempotency_keys set created_at = now() - interval '3 minutes' where user_id = ${student.id}`
    const res = await post(gw, student, body, { 'Idempotency-Key': 'orphan' })
    expect(res.status).toBe(200)
    const turn = await res.json()
    expect(turn.status).toBe('answered')
    // a day later the key is free again: the same request is a new turn
    await db.sql`update public.chat_idempotency_keys set created_at = now() - interval '25 hours' where user_id = ${student.id}`
    const tomorrow = await (await post(gw, student, body, { 'Idempotency-Key': 'orphan' })).json()
    expect(tomorrow.turn_id).not.toBe(turn.turn_id)
    // and the user's keys past their day are forgotten as new ones come
    await db.sql`update public.chat_idempotency_keys set created_at = now() - interval '25 hours' where user_id = ${student.id}`
    const another = await (await post(gw, student, body, { 'Idempotency-Key': 'another' })).json()
    expect((await db.sql`select key from public.chat_idempotency_keys where user_id = ${student.id}`).map((r) => r.key)).toEqual(['another'])
    expect((await money(student.id)).reservations).toBe(3)
    // the conversation deleted, the same key's retry cannot be its turn any more, nor a new one
    await db.sql`delete from public.conversations where id = ${another.conversation_id}`
    const again = await post(gw, student, body, { 'Idempotency-Key': 'another' })
    expect(again.status).toBe(404)
    expect((await money(student.id)).reservations).toBe(3)
  })

  it('rebuilds exactly the stored answer, charged once, whatever event an SSE client drops after (resumed by GET or by a retried POST)', async () => {
    const body = { message: 'Comment résoudre une équation du premier degré ?', grade: '4AS', subject: 'mathematiques', stream: true }
    // the events of a whole turn, to know every point to drop at
    const whole = events(await readSse(await post(gw, await createUser(db.sql), body)).rest())
    expect(whole.length).toBeGreaterThan(3)
    for (let k = 0; k <= whole.length; k++) {
      const student = await createUser(db.sql)
      const key = { 'Idempotency-Key': `drop-after-${k}` }
      const res = await post(gw, student, body, key)
      const turnId = res.headers.get('x-turn-id')!
      const reader = readSse(res)
      const got: Event[] = []
      while (got.length < k) {
        const item = await reader.next()
        if (!item) break
        if (item.kind === 'event') got.push(item)
      }
      await reader.cancel()
      const last = got.at(-1)?.id
      // even drops resume with GET and Last-Event-ID; odd ones retry the POST and skip what they have
      const resumed = k % 2 === 0
        ? events(await readSse(await getTurn(gw, student, turnId, { accept: 'text/event-stream', ...(last ? { 'last-event-id': String(last) } : {}) })).rest())
        : events(await readSse(await post(gw, student, body, key)).rest()).filter((e) => e.id! > (last ?? 0))
      const all = [...got, ...resumed]
      const ids = all.map((e) => e.id!)
      expect(new Set(ids).size, `k=${k}`).toBe(ids.length)
      expect(ids.every((id, i) => i === 0 || id > ids[i - 1]!), `k=${k}`).toBe(true)
      expect(all[0]!.event).toBe('meta')
      expect(all.at(-1)!.event, `k=${k}`).toBe('done')
      const answer = all.filter((e) => e.event === 'delta').map((e) => e.data.text).join('')
      await gw.deps.background.idle()
      expect(answer, `k=${k}`).toBe((await storedAnswer(turnId)).content)
      const m = await money(student.id)
      const done = all.at(-1)!.data
      expect(m, `k=${k}`).toEqual({ balance: 50 - done.usage.charged, ledger: 50 - done.usage.charged, usage: 1, reservations: 1, charged: done.usage.charged })
      expect(done.usage.characters).toBe([...answer].length)
    }
  })

  it('a JSON client that drops before its answer and retries with its key gets the same turn, charged once', async () => {
    for (const dropAfterMs of [0, 1, 5, 20]) {
      const student = await createUser(db.sql)
      const body = { message: "Quelle est la célérité du son dans l'eau ?", stream: false }
      const key = { 'Idempotency-Key': `json-drop-${dropAfterMs}` }
      const left = new AbortController()
      const first = post(gw, student, body, key, left.signal).catch((err: unknown) => err)
      setTimeout(() => left.abort(), dropAfterMs)
      await first
      const retried = await (await post(gw, student, body, key)).json()
      await gw.deps.background.idle()
      expect(retried.status).toBe('answered')
      expect(retried.answer).toBe((await storedAnswer(retried.turn_id)).content)
      expect(await money(student.id)).toEqual({
        balance: 50 - retried.usage.charged,
        ledger: 50 - retried.usage.charged,
        usage: 1,
        reservations: 1,
        charged: retried.usage.charged,
      })
    }
  })
})
