// A turn outlives its process's memory: two `npm start` processes on one database, the POST on one and
// the GET (or the cancel) on the other, which follows the database; and a process killed with SIGKILL in
// the middle of an answer, after which the turn is `interrupted`, its text readable, its hold released.
import type { ChildProcess } from 'node:child_process'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createTestDatabase, type TestDatabase } from './helpers/db.ts'
import { createUser, type TestUser } from './helpers/users.ts'
import { seedDocument } from './helpers/corpus.ts'
import { FR_LESSON } from './helpers/portal.ts'
import { type OpenAiServer, startOpenAiServer } from './helpers/openai-server.ts'
import { events, readSse, type SseItem } from './helpers/sse.ts'
import { LOCAL_JWT_SECRET } from '../functions-shared/config.ts'
import { startStackProcess } from './helpers/stack-process.ts'

type Event = Extract<SseItem, { kind: 'event' }>

let db: TestDatabase
let server: OpenAiServer
let dir: string
const children = new Set<ChildProcess>()

/** The answer the model streams: 60 pieces, 40 ms apart (about 2.4 s). */
const PIECES = Array.from({ length: 60 }, (_, i) => `étape${i} `)
const ANSWER = PIECES.join('')

interface Started {
  child: ChildProcess
  url: string
}

async function start(name: string): Promise<Started> {
  const { child, line } = await startStackProcess({
    DATABASE_URL: db.url,
    DATA_DIR: join(dir, name),
    JWT_SECRET: LOCAL_JWT_SECRET,
    AI_PROVIDER: 'openai',
    OPENAI_API_KEY: 'k',
    OPENAI_BASE_URL: server.url,
    OPENAI_CHAT_MODEL: 'chat-model',
    LOG_LEVEL: 'warn',
    CHAT_TURN_LEASE_SECONDS: '5',
    RATE_LIMIT_CHAT_PER_MINUTE: '1000',
    RATE_LIMIT_TURNS_PER_MINUTE: '1000',
  })
  children.add(child)
  return { child, url: line('API URL') }
}

const post = (s: Started, user: TestUser, body: unknown) =>
  fetch(`${s.url}/functions/v1/chat`, {
    method: 'POST',
    headers: { Authorization: `Bearer ${user.token}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  })
const turn = (s: Started, user: TestUser, turnId: string, headers: Record<string, string> = {}) =>
  fetch(`${s.url}/functions/v1/chat/turns/${turnId}`, { headers: { Authorization: `Bearer ${user.token}`, ...headers } })

/** Reads events until `enough` says so, then leaves. */
async function readUntil(res: Response, enough: (got: Event[]) => boolean): Promise<Event[]> {
  const reader = readSse(res)
  const got: Event[] = []
  for (let item = await reader.next(); item; item = await reader.next()) {
    if (item.kind === 'event') got.push(item)
    if (enough(got)) break
  }
  await reader.cancel()
  return got
}

async function money(userId: string) {
  const [w] = await db
    .sql`select w.token_balance::int as balance, (select coalesce(sum(delta), 0)::int from public.token_ledger l where l.user_id = w.user_id) as ledger,
                                  (select count(*)::int from public.reservations r where r.user_id = w.user_id and r.status = 'reserved') as held
                             from public.wallets w where w.user_id = ${userId}`
  return w as { balance: number; ledger: number; held: number }
}

const question = { message: 'Comment résoudre une équation du premier degré ?', grade: '4AS', subject: 'mathematiques', stream: true }

beforeAll(async () => {
  db = await createTestDatabase()
  server = await startOpenAiServer()
  // the answer is streamed slowly; the rerank and translations (not streamed) get an empty answer and fall back
  server.chat = (body) => (body.stream ? { content: ANSWER, pieceDelayMs: 40 } : { content: '' })
  dir = await mkdtemp(join(tmpdir(), 'resume-'))
  await seedDocument(db.sql, { name: 'Mathématiques 4AS', grade: '4AS', subject: 'mathematiques', language: 'fr', texts: FR_LESSON.split(/(?<=\.) /) })
})
afterAll(async () => {
  for (const child of children) child.kill('SIGKILL')
  await server?.close()
  await db?.close()
  await rm(dir, { recursive: true, force: true })
})

describe('a turn followed from another process', () => {
  let a: Started
  let b: Started
  beforeAll(async () => {
    ;[a, b] = await Promise.all([start('a'), start('b')])
  })
  afterAll(() => {
    a?.child.kill('SIGTERM')
    b?.child.kill('SIGTERM')
  })

  it('is resumed on the other process after its Last-Event-ID and followed live to its end, the same answer, charged once', async () => {
    const student = await createUser(db.sql)
    const res = await post(a, student, question)
    const turnId = res.headers.get('x-turn-id')!
    const first = await readUntil(res, (got) => got.filter((e) => e.event === 'delta').length >= 3)
    const resumed = events(await readSse(await turn(b, student, turnId, { accept: 'text/event-stream', 'last-event-id': String(first.at(-1)!.id) })).rest())
    const all = [...first, ...resumed]
    const ids = all.map((e) => e.id!)
    expect(ids.every((id, i) => i === 0 || id > ids[i - 1]!)).toBe(true)
    // followed while it was generated: more than one delta came from the other process
    expect(resumed.filter((e) => e.event === 'delta').length).toBeGreaterThan(1)
    expect(all.filter((e) => e.event === 'delta').map((e) => e.data.text).join('')).toBe(ANSWER)
    const done = all.at(-1)!
    expect(done).toMatchObject({ event: 'done', data: { outcome: 'answered', usage: { characters: ANSWER.length } } })
    const json = await (await turn(b, student, turnId)).json()
    expect(json).toMatchObject({ status: 'answered', answer: ANSWER, turn_id: turnId })
    expect(await money(student.id)).toEqual({ balance: 50 - done.data.usage.charged, ledger: 50 - done.data.usage.charged, held: 0 })
  })

  it('is cancelled from the other process: billed for what was generated until then', async () => {
    const student = await createUser(db.sql)
    const res = await post(a, student, question)
    const turnId = res.headers.get('x-turn-id')!
    await readUntil(res, (got) => got.some((e) => e.event === 'delta'))
    const cancel = await fetch(`${b.url}/functions/v1/chat/turns/${turnId}/cancel`, { method: 'POST', headers: { Authorization: `Bearer ${student.token}` } })
    expect([200, 202]).toContain(cancel.status)
    let body = await cancel.json()
    const deadline = Date.now() + 20_000
    while (body.status === 'streaming' && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 100))
      body = await (await turn(b, student, turnId)).json()
    }
    expect(body.status).toBe('cancelled')
    expect(body.answer.length).toBeGreaterThan(0)
    expect(body.answer.length).toBeLessThan(ANSWER.length)
    expect(ANSWER.startsWith(body.answer)).toBe(true)
    expect(body.usage).toMatchObject({ characters: body.answer.length, charged: 5 + Math.ceil(body.answer.length / 200) })
    expect(await money(student.id)).toEqual({ balance: 50 - body.usage.charged, ledger: 50 - body.usage.charged, held: 0 })
  })
})

describe('a process killed in the middle of an answer', () => {
  it('leaves the turn interrupted after a restart: its text readable, its hold released, nothing charged', async () => {
    const a = await start('killed')
    const student = await createUser(db.sql)
    const res = await post(a, student, question)
    const turnId = res.headers.get('x-turn-id')!
    // past the first batch's write (CHAT_PERSIST_INTERVAL_MS, 250 ms: 10 pieces 40 ms apart)
    const got = await readUntil(res, (events) => events.filter((e) => e.event === 'delta').length >= 10)
    const received = got.filter((e) => e.event === 'delta').map((e) => e.data.text).join('')
    a.child.kill('SIGKILL')
    await new Promise((r) => a.child.once('exit', r))
    expect((await money(student.id)).held).toBe(1)
    const again = await start('restarted')
    // its lease (5 s here) runs out: the restarted process, or any read of the turn, interrupts it
    let body: Record<string, any> = {}
    const deadline = Date.now() + 30_000
    for (;;) {
      body = await (await turn(again, student, turnId)).json()
      if (body.status !== 'streaming' || Date.now() > deadline) break
      await new Promise((r) => setTimeout(r, 200))
    }
    expect(body.status).toBe('interrupted')
    expect(body.error).toMatchObject({ error: 'service_unavailable' })
    // what was written before the kill is kept: a first batch at least, all of it text the client read
    expect(body.answer.length).toBeGreaterThan(0)
    expect(ANSWER.startsWith(body.answer)).toBe(true)
    expect(received.startsWith(body.answer) || body.answer.startsWith(received)).toBe(true)
    expect(await money(student.id)).toEqual({ balance: 50, ledger: 50, held: 0 })
    const [usage] = await db.sql`select kind, charged, details from public.usage_log where user_id = ${student.id}`
    expect(usage).toMatchObject({ kind: 'released', charged: 0, details: { outcome: 'interrupted' } })
    // a resumed stream ends with the interruption
    const replay = events(await readSse(await turn(again, student, turnId, { accept: 'text/event-stream' })).rest())
    expect(replay.map((e) => e.event).at(-1)).toBe('error')
    expect(replay.filter((e) => e.event === 'delta').map((e) => e.data.text).join('')).toBe(body.answer)
    again.child.kill('SIGTERM')
  })
})
