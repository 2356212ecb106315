// What a turn costs the database in round trips: the statements a warm turn sends, counted where
// postgres.js sends them (its debug hook), over the real gateway with the offline provider. Every
// statement is a round trip, and a round trip costs the service's CPU as well as time.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createTestDatabase, type TestDatabase } from './helpers/db.ts'
import { testConfig } from './helpers/app.ts'
import { createUser, type TestUser } from './helpers/users.ts'
import { seedDocument } from './helpers/corpus.ts'
import { FR_LESSON } from './helpers/portal.ts'
import { type Gateway, startGateway } from '../scripts/lib/gateway.ts'
import { FakeClock } from '../functions-shared/lib/clock.ts'
import { createOfflineProvider } from '../functions-shared/ai/offline.ts'
import { createDb, type Sql } from '../functions-shared/db/client.ts'

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
  it('sends five for a question that names its subject: the wallet checked once, no transaction around a read', async () => {
    const user = await createUser(db.sql)
    const labelled = { message: "Comment isole-t-on l'inconnue dans une équation ?", grade: '4AS', subject: 'mathematiques' }
    await turnStatements(user, labelled)
    const warm = names(await turnStatements(user, labelled))
    expect(warm).toEqual(['begin_chat_turn', 'begin_conversation_turn', 'hybrid_search', 'finalize_chat_turn', 'end_conversation_turn'])
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
      'begin_chat_turn',
      'begin_conversation_turn',
      'finalize_chat_turn',
      'end_conversation_turn',
    ])
  })
})
