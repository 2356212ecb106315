// What a turn costs the database in round trips: the statements a warm turn sends, counted where
// postgres.js sends them (its debug hook), over the real gateway with the offline provider. Every
// statement is a round trip, and a round trip costs the service's CPU as well as time.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createTestDatabase, type TestDatabase } from './helpers/db.ts'
import { createUser, type TestUser } from './helpers/users.ts'
import { seedDocument } from './helpers/corpus.ts'
import { FR_LESSON } from './helpers/portal.ts'
import { type Gateway, startGateway } from '../scripts/lib/gateway.ts'
import { FakeClock } from '../functions-shared/lib/clock.ts'
import { createOfflineProvider } from '../functions-shared/ai/offline.ts'
import { createDb, type Sql } from '../functions-shared/db/client.ts'
import { createTestApp, testConfig } from './helpers/app.ts'
import { chatRuntime } from '../functions-shared/chat/runtime.ts'
import { checkWallet } from '../functions-shared/chat/settle.ts'
import { decisionMeta } from '../functions-shared/chat/agent.ts'
import { recordedStart } from '../functions-shared/chat/turn-writes.ts'
import type { Decision, TurnContext } from '../functions-shared/chat/turn.ts'

let db: TestDatabase
let counted: Sql
let gw: Gateway
const statements: string[] = []

beforeAll(async () => {
  db = await createTestDatabase()
  await seedDocument(db.sql, { name: 'Mathématiques 4AS', grade: '4AS', subject: 'mathematiques', language: 'fr', texts: FR_LESSON.split(/(?<=\.) /) })
  counted = createDb(db.url, { max: 4, prepare: true, onStatement: (q) => statements.push(q.replace(/\s+/g, ' ').trim()) })
  const config = testConfig({ LOG_LEVEL: 'silent', EXPIRY_INTERVAL_SECONDS: '0', RATE_LIMIT_CHAT_PER_MINUTE: '100000' })
  gw = await startGateway({ config, sql: counted, port: 0, deps: { clock: new FakeClock(Date.now()), ai: createOfflineProvider(), sources: [] } })
})
afterAll(async () => {
  await gw?.close()
  await counted?.end({ timeout: 5 })
  await db?.close()
})

/** The statements one turn sends, from its request to its stored end. */
async function turnStatements(user: TestUser, body: Record<string, unknown>): Promise<string[]> {
  statements.length = 0
  const res = await fetch(`${gw.url}/functions/v1/chat`, {
    method: 'POST',
    headers: { Authorization: `Bearer ${user.token}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  })
  expect(res.status).toBe(200)
  const turnId = res.headers.get('x-turn-id')!
  await res.json()
  // the turn's last writes may follow its answer: wait (on another client) until it is stored as ended
  for (;;) {
    const [row] = await db.sql<{ status: string }[]>`select status from public.chat_turns where id = ${turnId}`
    if (row && row.status !== 'streaming') break
    await new Promise((r) => setImmediate(r))
  }
  return [...statements]
}

const names = (statements: string[]) => statements.map((s) => /public\.(\w+)\(/.exec(s)?.[1] ?? s.split(' ').slice(0, 4).join(' '))

describe('the statements of a warm turn', () => {
  it('sends three for a question that names its subject: the tokens held with the record begun, the search, the settlement with the end', async () => {
    const user = await createUser(db.sql)
    const labelled = { message: "Comment isole-t-on l'inconnue dans une équation ?", grade: '4AS', subject: 'mathematiques' }
    await turnStatements(user, labelled)
    const warm = names(await turnStatements(user, labelled))
    // the reservation held and the turn's record begun in one statement, settled and ended in another
    expect(warm).toEqual(['begin_recorded_chat_turn', 'hybrid_search', 'finalize_recorded_chat_turn'])
  })

  it("sends one more for a question whose subject is found: the wallet read before the search (with the day's turns and the catalogue's subjects), and one search that finds the subject and its candidates", async () => {
    const user = await createUser(db.sql)
    const unlabelled = { message: "Comment isole-t-on l'inconnue dans une équation ?" }
    await turnStatements(user, unlabelled)
    const warm = await turnStatements(user, unlabelled)
    expect(warm.filter((s) => /^(begin|commit)$/i.test(s))).toEqual([])
    // the retrieval takes the candidates catalogue_search found for the chosen subject: no second search
    expect(names(warm)).toEqual([
      'turns_today',
      'catalogue_search',
      'begin_recorded_chat_turn',
      'finalize_recorded_chat_turn',
    ])
  })

  it('stores the meta and the end the turn sent: what was held, and the settlement, in the statements that hold and settle it', async () => {
    const user = await createUser(db.sql)
    const res = await fetch(`${gw.url}/functions/v1/chat`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${user.token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ message: "Comment isole-t-on l'inconnue ?", grade: '4AS', subject: 'mathematiques' }),
    })
    const body = await res.json()
    // the turn is settled and ended by a statement of its own, after the answer: wait until it is stored
    let row: { meta: Record<string, unknown>; terminal: { event: string; data: Record<string, unknown> } | null; answer: string } | undefined
    for (;;) {
      ;[row] = await db.sql<NonNullable<typeof row>[]>`
        select t.meta, t.terminal, m.content as answer from public.chat_turns t
          join public.chat_messages m on m.turn_id = t.id and m.role = 'teacher' where t.id = ${body.turn_id}`
      if (row?.terminal) break
      await new Promise((r) => setImmediate(r))
    }
    const held = (m: Record<string, unknown>) => ({ tier: m.tier, hint_level: m.hint_level, reservation: m.reservation, turn_id: m.turn_id })
    expect(held(row!.meta)).toEqual(held(body))
    // the end written with the settlement is the one the student was sent: its usage and timings, the whole answer
    const { outcome, usage, model, extractive, timings } = body
    expect(row!.terminal).toEqual({ event: 'done', data: { outcome, usage, model, extractive, timings } })
    expect(usage.charged).toBeGreaterThan(0)
    expect(row!.answer).toBe(body.answer)
    expect((body.reservation as { expires_at: string }).expires_at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/)
  })

  it('holds nothing for a conversation deleted since it was read: the statement is refused whole', async () => {
    const { deps } = createTestApp({ sql: db.sql })
    const user = await createUser(db.sql)
    const ctx: TurnContext = { deps, rt: chatRuntime(deps), requestId: 'r-gone', userId: user.id, log: deps.logs.forRequest('chat', 'r-gone'), timings: {} }
    const decision: Decision = {
      path: 'answer',
      reason: 'subject_given',
      language: 'fr',
      subject: 'mathematiques',
      subjectInferred: false,
      grade: '4AS',
      fileId: null,
    }
    const turnId = crypto.randomUUID()
    const record = recordedStart(deps, {
      turnId,
      conversationId: crypto.randomUUID(),
      question: 'et ensuite ?',
      meta: decisionMeta(ctx, decision),
      lesson: { grade: '4AS', subject: 'mathematiques' },
    })
    await expect(checkWallet(ctx, decision, record)).rejects.toMatchObject({ code: 'not_found' })
    const [left] = await db.sql<{ reservations: number; turns: number }[]>`
      select (select count(*)::int from public.reservations where user_id = ${user.id}) as reservations,
             (select count(*)::int from public.chat_turns where id = ${turnId}) as turns`
    expect(left).toEqual({ reservations: 0, turns: 0 })
    // the same start with no conversation makes one, and holds the turn
    const hold = await checkWallet(ctx, decision, { ...record, conversationId: null })
    expect(hold.conversationId).toMatch(/^[0-9a-f-]{36}$/)
  })
})
