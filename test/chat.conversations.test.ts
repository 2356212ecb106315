// Conversations: every turn belongs to one, which an app lists, reads and deletes with supabase-js (RLS
// on the local /rest/v1 as on Supabase); a follow-up keeps its lesson, and the model's history is the
// conversation's stored messages within the tier's budget; a cancel bills what was generated.
import { createClient } from '@supabase/supabase-js'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createTestDatabase, type TestDatabase } from './helpers/db.ts'
import { createUser, type TestUser } from './helpers/users.ts'
import { seedChatLessons } from './helpers/corpus.ts'
import { chatGateway, getTurn, moneyOf, post } from './helpers/chat-turns.ts'
import { type OpenAiServer, startOpenAiServer } from './helpers/openai-server.ts'
import { events, readSse } from './helpers/sse.ts'
import type { Gateway } from '../scripts/lib/gateway.ts'
import { apiKey } from '../functions-shared/lib/keys.ts'
import { LOCAL_JWT_SECRET } from '../functions-shared/config.ts'

let db: TestDatabase
const gateway = (ai: Parameters<typeof chatGateway>[1]) => chatGateway(db, ai)
const money = (userId: string) => moneyOf(db.sql, userId)

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
    expect(first).toMatchObject({
      reason: 'subject_inferred_from_catalogue',
      subject: 'mathematiques',
      status: 'answered',
      turn_id: expect.any(String),
      conversation_id: expect.any(String),
    })
    // elliptical: no subject named; without the conversation it would be searched over the whole catalogue
    const res = await post(gw, student, { message: 'et pour vérifier la solution ?', conversation_id: first.conversation_id })
    expect(res.headers.get('x-conversation-id')).toBe(first.conversation_id)
    const second = await res.json()
    expect(second).toMatchObject({ reason: 'subject_from_conversation', subject: 'mathematiques', conversation_id: first.conversation_id, status: 'answered' })
    expect(second.sources.every((s: { title: string }) => s.title === 'Mathématiques 4AS')).toBe(true)
    // a question that names another subject leaves the conversation's lesson
    const third =
      await (await post(gw, student, { message: "en physique, quelle est la célérité du son dans l'eau ?", conversation_id: first.conversation_id })).json()
    expect(third).toMatchObject({ reason: 'subject_inferred_from_catalogue', subject: 'physique' })

    const anon = await apiKey(LOCAL_JWT_SECRET, 'anon')
    const as = (user: TestUser) =>
      createClient(gw.url, anon, { auth: { persistSession: false, autoRefreshToken: false }, global: { headers: { Authorization: `Bearer ${user.token}` } } })
    const supabase = as(student)
    const listed = await supabase.from('conversations').select('id, title, updated_at').order('updated_at', { ascending: false })
    expect(listed.error).toBeNull()
    expect(listed.data).toEqual([{ id: first.conversation_id, title: 'Comment résoudre une équation du premier degré ?', updated_at: expect.any(String) }])
    const messages = await supabase.from('chat_messages').select('role, content, sources, status').eq('conversation_id', first.conversation_id).order(
      'created_at',
    )
    expect(messages.error).toBeNull()
    expect(messages.data!.map((m) => `${m.role}:${m.status}`)).toEqual([
      'student:sent',
      'teacher:answered',
      'student:sent',
      'teacher:answered',
      'student:sent',
      'teacher:answered',
    ])
    expect(messages.data![0]!.content).toBe('Comment résoudre une équation du premier degré ?')
    expect(messages.data![1]).toMatchObject({ content: first.answer, sources: first.sources })
    // a conversation with its messages in one read, embedded as on hosted Supabase
    const whole = await supabase.from('conversations').select('title, chat_messages(role, status)').eq('id', first.conversation_id)
      .order('created_at', { referencedTable: 'chat_messages' }).single()
    expect(whole.error).toBeNull()
    expect(whole.data!.chat_messages.map((m: { role: string; status: string }) => `${m.role}:${m.status}`)).toEqual(
      messages.data!.map((m) => `${m.role}:${m.status}`),
    )
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

  it("refuses another student's conversation (404) and a history sent with a conversation (400), reserving nothing", async () => {
    const owner = await createUser(db.sql)
    const { conversation_id } = await (await post(gw, owner, { message: "Qu'est-ce qu'une onde mécanique ?" })).json()
    const intruder = await createUser(db.sql)
    const theirs = await post(gw, intruder, { message: 'et ensuite ?', conversation_id })
    expect(theirs.status).toBe(404)
    expect(await theirs.json()).toMatchObject({ error: 'not_found', request_id: theirs.headers.get('x-request-id') })
    const both = await post(gw, owner, { message: 'et ensuite ?', conversation_id, history: [{ role: 'user', content: 'bonjour' }] })
    expect(both.status).toBe(400)
    expect(await both.json()).toMatchObject({
      error: 'bad_request',
      message: expect.stringContaining('conversation_id or history'),
      fields: [{ field: 'history' }],
    })
    expect((await money(owner.id)).reservations).toBe(1)
    expect((await getTurn(gw, intruder, crypto.randomUUID())).status).toBe(404)
    const badId = await getTurn(gw, owner, crypto.randomUUID(), { 'last-event-id': 'abc' })
    expect(badId.status).toBe(400)
  })
})

describe("the model's history in a conversation", () => {
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
    server.chat = (body) => (body.stream ? (asked(), { content: "La célérité du son dans l'eau est de 1500 m/s [1].", gate }) : { content: '' })
    const res = await post(gw, student, { message: "la célérité du son dans l'eau", grade: '5AS', subject: 'physique', stream: true })
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
    const answered = await (await post(gw, student, { message: "la célérité du son dans l'air", grade: '5AS', subject: 'physique' })).json()
    const late = await fetch(`${gw.url}/functions/v1/chat/turns/${answered.turn_id}/cancel`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${student.token}` },
    })
    expect(late.status).toBe(409)
    expect(await late.json()).toMatchObject({ error: 'conflict', status: 'answered' })
  })

  it("is the conversation's stored messages, oldest first, and stays within the tier's budget", async () => {
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
