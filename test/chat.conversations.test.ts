// Conversations and turns that survive the network: every turn belongs to a conversation an app lists
// with supabase-js; a follow-up keeps its lesson; a client that drops at any point of a turn resumes it
// (GET /chat/turns/{id} with Last-Event-ID) or retries it (the same Idempotency-Key) and rebuilds exactly
// the stored answer, charged once; a cancel bills what was generated.
import { createClient } from '@supabase/supabase-js'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createTestDatabase, type TestDatabase } from './helpers/db.ts'
import { testConfig } from './helpers/app.ts'
import { createUser, type TestUser } from './helpers/users.ts'
import { seedChatLessons } from './helpers/corpus.ts'
import { startOpenAiServer, type OpenAiServer } from './helpers/openai-server.ts'
import { events, readSse, type SseItem } from './helpers/sse.ts'
import { startGateway, type Gateway } from '../scripts/lib/gateway.ts'
import { FakeClock } from '../functions-shared/lib/clock.ts'
import { createLogRoot } from '../functions-shared/lib/logger.ts'
import { createOpenAiProvider } from '../functions-shared/ai/openai.ts'
import { createOfflineProvider } from '../functions-shared/ai/offline.ts'
import { apiKey } from '../functions-shared/lib/keys.ts'
import { LOCAL_JWT_SECRET } from '../functions-shared/config.ts'

type Event = Extract<SseItem, { kind: 'event' }>

let db: TestDatabase

async function gateway(ai: 'offline' | OpenAiServer): Promise<Gateway> {
  const provider =
    ai === 'offline'
      ? createOfflineProvider()
      : createOpenAiProvider({ apiKey: 'k', baseUrl: ai.url, chatModel: 'chat-model', embeddingModel: 'embed-model', rerankModel: 'rerank-model', translateModel: 'translate-model', dimension: 1536, timeoutMs: 60_000 })
  const config = testConfig({ LOG_LEVEL: 'silent', EXPIRY_INTERVAL_SECONDS: '0', RATE_LIMIT_CHAT_PER_MINUTE: '1000' })
  return startGateway({ config, sql: db.connect(4), port: 0, deps: { clock: new FakeClock(Date.now()), ai: provider, logs: createLogRoot({ level: 'silent' }), sources: [] } })
}

const post = (gw: Gateway, user: TestUser, body: unknown, headers: Record<string, string> = {}, signal?: AbortSignal) =>
  fetch(`${gw.url}/functions/v1/chat`, {
    method: 'POST',
    headers: { Authorization: `Bearer ${user.token}`, 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
    ...(signal ? { signal } : {}),
  })
const getTurn = (gw: Gateway, user: TestUser, turnId: string, headers: Record<string, string> = {}) =>
  fetch(`${gw.url}/functions/v1/chat/turns/${turnId}`, { headers: { Authorization: `Bearer ${user.token}`, ...headers } })

/** The student's money: balance, Σ ledger, usage rows, reservations. */
async function money(userId: string) {
  const [w] = await db.sql`select w.token_balance::int as balance, (select coalesce(sum(delta), 0)::int from public.token_ledger l where l.user_id = w.user_id) as ledger,
                                  (select count(*)::int from public.usage_log u where u.user_id = w.user_id) as usage,
                                  (select count(*)::int from public.reservations r where r.user_id = w.user_id) as reservations,
                                  (select coalesce(sum(charged), 0)::int from public.usage_log u where u.user_id = w.user_id) as charged
                             from public.wallets w where w.user_id = ${userId}`
  return w as { balance: number; ledger: number; usage: number; reservations: number; charged: number }
}
const storedAnswer = async (turnId: string) => (await db.sql`select content, status from public.chat_messages where turn_id = ${turnId} and role = 'teacher'`)[0] as { content: string; status: string }

beforeAll(async () => {
  db = await createTestDatabase({ poolMax: 8 })
  await seedChatLessons(db.sql)
})
afterAll(async () => db?.close())

describe('conversations', () => {
  let gw: Gateway
  beforeAll(async () => {
    gw = await gateway('offline')
  })
  afterAll(async () => gw?.close())

  it('keeps each question in a conversation that an app lists and deletes with supabase-js; a follow-up keeps its lesson', async () => {
    const student = await createUser(db.sql)
    const first = await (await post(gw, student, { message: 'Comment résoudre une équation du premier degré ?' })).json()
    expect(first).toMatchObject({ reason: 'subject_inferred_from_catalogue', subject: 'mathematiques', status: 'answered', turn_id: expect.any(String), conversation_id: expect.any(String) })
    // elliptical: no subject named; without the conversation it would be searched over the whole catalogue
    const res = await post(gw, student, { message: 'et pour vérifier la solution ?', conversation_id: first.conversation_id })
    expect(res.headers.get('x-conversation-id')).toBe(first.conversation_id)
    const second = await res.json()
    expect(second).toMatchObject({ reason: 'subject_from_conversation', subject: 'mathematiques', conversation_id: first.conversation_id, status: 'answered' })
    expect(second.sources.every((s: { title: string }) => s.title === 'Mathématiques 4AS')).toBe(true)
    // a question that names another subject leaves the conversation's lesson
    const third = await (await post(gw, student, { message: 'en physique, quelle est la célérité du son dans l\'eau ?', conversation_id: first.conversation_id })).json()
    expect(third).toMatchObject({ reason: 'subject_inferred_from_catalogue', subject: 'physique' })

    const anon = await apiKey(LOCAL_JWT_SECRET, 'anon')
    const as = (user: TestUser) =>
      createClient(gw.url, anon, { auth: { persistSession: false, autoRefreshToken: false }, global: { headers: { Authorization: `Bearer ${user.token}` } } })
    const supabase = as(student)
    const listed = await supabase.from('conversations').select('id, title, updated_at').order('updated_at', { ascending: false })
    expect(listed.error).toBeNull()
    expect(listed.data).toEqual([{ id: first.conversation_id, title: 'Comment résoudre une équation du premier degré ?', updated_at: expect.any(String) }])
    const messages = await supabase.from('chat_messages').select('role, content, sources, status').eq('conversation_id', first.conversation_id).order('created_at')
    expect(messages.error).toBeNull()
    expect(messages.data!.map((m) => `${m.role}:${m.status}`)).toEqual(['student:sent', 'teacher:answered', 'student:sent', 'teacher:answered', 'student:sent', 'teacher:answered'])
    expect(messages.data![0]!.content).toBe('Comment résoudre une équation du premier degré ?')
    expect(messages.data![1]).toMatchObject({ content: first.answer, sources: first.sources })
    // nobody else reads them, writes them, or deletes them
    const other = as(await createUser(db.sql))
    expect((await other.from('conversations').select('id')).data).toEqual([])
    expect((await other.from('chat_messages').select('id')).data).toEqual([])
    await other.from('conversations').delete().eq('id', first.conversation_id)
    expect((await supabase.from('conversations').select('id')).data).toHaveLength(1)
    const write = await supabase.from('chat_messages').update({ content: 'a free answer' }).eq('conversation_id', first.conversation_id)
    expect(write.error?.code).toBe('42501')
    const before = await money(student.id)
    // the owner deletes it: its messages go with it, the money records stay
    const deleted = await supabase.from('conversations').delete().eq('id', first.conversation_id)
    expect(deleted.error).toBeNull()
    expect((await supabase.from('conversations').select('id')).data).toEqual([])
    expect((await db.sql`select count(*)::int as n from public.chat_messages where conversation_id = ${first.conversation_id}`)[0]!.n).toBe(0)
    expect(await money(student.id)).toEqual(before)
    expect(before.usage).toBe(3)
    expect((await getTurn(gw, student, first.turn_id)).status).toBe(404)
    // and a new question in it is refused: it no longer exists
    const gone = await post(gw, student, { message: 'et ensuite ?', conversation_id: first.conversation_id })
    expect(gone.status).toBe(404)
    expect((await money(student.id)).reservations).toBe(3)
  })

  it('refuses another student\'s conversation (404) and a history sent with a conversation (400), reserving nothing', async () => {
    const owner = await createUser(db.sql)
    const { conversation_id } = await (await post(gw, owner, { message: 'Qu\'est-ce qu\'une onde mécanique ?' })).json()
    const intruder = await createUser(db.sql)
    const theirs = await post(gw, intruder, { message: 'et ensuite ?', conversation_id })
    expect(theirs.status).toBe(404)
    expect(await theirs.json()).toMatchObject({ error: 'not_found', request_id: theirs.headers.get('x-request-id') })
    const both = await post(gw, owner, { message: 'et ensuite ?', conversation_id, history: [{ role: 'user', content: 'bonjour' }] })
    expect(both.status).toBe(400)
    expect(await both.json()).toMatchObject({ error: 'bad_request', message: expect.stringContaining('conversation_id or history'), fields: [{ field: 'history' }] })
    expect((await money(owner.id)).reservations).toBe(1)
    expect((await getTurn(gw, intruder, crypto.randomUUID())).status).toBe(404)
    const badId = await getTurn(gw, owner, crypto.randomUUID(), { 'last-event-id': 'abc' })
    expect(badId.status).toBe(400)
  })

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

  it('takes over a key whose request died before its turn began, and says a key\'s deleted conversation is gone', async () => {
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
      const resumed =
        k % 2 === 0
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
      const body = { message: 'Quelle est la célérité du son dans l\'eau ?', stream: false }
      const key = { 'Idempotency-Key': `json-drop-${dropAfterMs}` }
      const left = new AbortController()
      const first = post(gw, student, body, key, left.signal).catch((err: unknown) => err)
      setTimeout(() => left.abort(), dropAfterMs)
      await first
      const retried = await (await post(gw, student, body, key)).json()
      await gw.deps.background.idle()
      expect(retried.status).toBe('answered')
      expect(retried.answer).toBe((await storedAnswer(retried.turn_id)).content)
      expect(await money(student.id)).toEqual({ balance: 50 - retried.usage.charged, ledger: 50 - retried.usage.charged, usage: 1, reservations: 1, charged: retried.usage.charged })
    }
  })
})

describe('the model\'s history in a conversation', () => {
  let server: OpenAiServer
  let gw: Gateway
  beforeAll(async () => {
    server = await startOpenAiServer()
    gw = await gateway(server)
  })
  afterAll(async () => {
    await gw?.close()
    await server?.close()
  })

  it('bills nothing and hands out nothing for a turn cancelled before its first text', async () => {
    const student = await createUser(db.sql)
    let release!: () => void
    const gate = new Promise<void>((r) => (release = r))
    let asked!: () => void
    const modelAsked = new Promise<void>((r) => (asked = r))
    server.chat = (body) => (body.stream ? (asked(), { content: 'La célérité du son dans l\'eau est de 1500 m/s [1].', gate }) : { content: '' })
    const res = await post(gw, student, { message: 'la célérité du son dans l\'eau', grade: '5AS', subject: 'physique', stream: true })
    const turnId = res.headers.get('x-turn-id')!
    const reader = readSse(res)
    await modelAsked
    const cancel = await fetch(`${gw.url}/functions/v1/chat/turns/${turnId}/cancel`, { method: 'POST', headers: { Authorization: `Bearer ${student.token}` } })
    release()
    expect(cancel.status).toBe(200)
    const turn = await cancel.json()
    expect(turn).toMatchObject({ status: 'cancelled', outcome: 'cancelled', answer: '', sources: [], usage: { charged: 0, characters: 0 } })
    const seen = events(await reader.rest())
    expect(seen.map((e) => e.event)).toEqual(['meta', 'sources', 'done'])
    expect(seen[1]!.data.sources).toEqual([])
    await gw.deps.background.idle()
    const [usage] = await db.sql`select kind, charged, details from public.usage_log where user_id = ${student.id}`
    expect(usage).toMatchObject({ kind: 'released', charged: 0, details: { outcome: 'cancelled', sources: [] } })
    expect(await money(student.id)).toMatchObject({ balance: 50, ledger: 50 })
    // cancelling a turn that ended otherwise is a conflict
    server.chat = (body) => (body.stream ? { content: 'Réponse.' } : { content: '' })
    const answered = await (await post(gw, student, { message: 'la célérité du son dans l\'air', grade: '5AS', subject: 'physique' })).json()
    const late = await fetch(`${gw.url}/functions/v1/chat/turns/${answered.turn_id}/cancel`, { method: 'POST', headers: { Authorization: `Bearer ${student.token}` } })
    expect(late.status).toBe(409)
    expect(await late.json()).toMatchObject({ error: 'conflict', status: 'answered' })
  })

  it('is the conversation\'s stored messages, oldest first, and stays within the tier\'s budget', async () => {
    const student = await createUser(db.sql)
    server.chat = () => ({ content: 'On isole x [1].' })
    const first = await (await post(gw, student, { message: 'Comment résoudre 3x + 2 = 11 ?', grade: '4AS', subject: 'mathematiques' })).json()
    server.chat = () => ({ content: 'On remplace x par la solution [1].' })
    await (await post(gw, student, { message: 'Et pour vérifier ?', conversation_id: first.conversation_id })).json()
    const call = server.calls.filter((c) => c.body.model === 'chat-model').at(-1)!.body
    const dialogue = (messages: { role: string; content: string }[]) => messages.filter((m) => m.role !== 'system')
    expect(dialogue(call.messages).map((m) => [m.role, m.content])).toEqual([
      ['user', 'Comment résoudre 3x + 2 = 11 ?'],
      ['assistant', 'On isole x [1].'],
      ['user', 'Et pour vérifier ?'],
    ])
    // a long answer before: the oldest messages past the free tier's 2,000 characters are left out
    server.chat = () => ({ content: 'x'.repeat(1900) })
    await (await post(gw, student, { message: 'Et en détail ?', conversation_id: first.conversation_id })).json()
    server.chat = () => ({ content: 'Bien.' })
    await (await post(gw, student, { message: 'Et la suite de la méthode ?', conversation_id: first.conversation_id })).json()
    const last = server.calls.filter((c) => c.body.model === 'chat-model').at(-1)!.body
    const history = dialogue(last.messages).slice(0, -1)
    expect(history.reduce((n, m) => n + m.content.length, 0)).toBeLessThanOrEqual(2000)
    expect(history.at(-1)!.content).toBe('x'.repeat(1900))
  })
})
