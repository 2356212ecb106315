// A lesson published twice (a second edition, re-paginated, with a header the duplicate check did not
// see past) is two documents; its pages are the turn's sources once (copies.ts), and it weighs once in
// the subject inferred from the catalogue, not once per copy.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createTestDatabase, type TestDatabase } from './helpers/db.ts'
import { testConfig } from './helpers/app.ts'
import { createUser } from './helpers/users.ts'
import { seedDocument } from './helpers/corpus.ts'
import { type Gateway, startGateway } from '../scripts/lib/gateway.ts'
import { createLogRoot } from '../functions-shared/lib/logger.ts'
import { createOfflineProvider } from '../functions-shared/ai/offline.ts'

let db: TestDatabase
let gw: Gateway
const docs: Record<string, string> = {}

const CIVICS =
  "Le Président de la République est élu au suffrage universel direct. Son mandat dure cinq années et n'est renouvelable qu'une fois. Il nomme le Premier ministre, préside le Conseil des ministres et promulgue les lois votées par le Parlement."
const MINES = [
  "La société nationale des mines exploite le minerai de fer du nord depuis de nombreuses années. Son président est élu par le conseil d'administration, qui fixe combien d'années dure son mandat.",
  "Le minerai est transporté par le train minéralier jusqu'au port de Nouadhibou, puis exporté vers l'Europe et l'Asie ; les recettes de l'exportation financent une partie du budget de l'État.",
]

beforeAll(async () => {
  db = await createTestDatabase({ poolMax: 6 })
  docs.civics = (await seedDocument(db.sql, { name: 'La Constitution', grade: '4AS', subject: 'instruction-civique', language: 'fr', texts: [CIVICS] })).id
  docs.mines = (await seedDocument(db.sql, { name: 'Les mines', grade: '6AS', subject: 'histoire-geographie', language: 'fr', texts: [MINES.join(' ')] })).id
  // the second edition: a header added, the lesson over two pages
  docs.edition = (await seedDocument(db.sql, {
    name: 'Les mines, édition 2025',
    grade: '6AS',
    subject: 'histoire-geographie',
    language: 'fr',
    texts: [`Édition 2025, revue et corrigée. ${MINES[0]}`, MINES[1]!],
  })).id
  const config = testConfig({ LOG_LEVEL: 'silent', EXPIRY_INTERVAL_SECONDS: '0' })
  gw = await startGateway({ config, sql: db.connect(3), port: 0, deps: { ai: createOfflineProvider(), logs: createLogRoot({ level: 'silent' }), sources: [] } })
})
afterAll(async () => {
  await gw?.close()
  await db?.close()
})

const ask = async (message: string) => {
  const { token } = await createUser(db.sql)
  const res = await fetch(`${gw.url}/functions/v1/chat`, {
    method: 'POST',
    headers: { Authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify({ stream: false, message }),
  })
  const body = await res.json()
  expect(res.status).toBe(200)
  const [usage] = await db.sql`select details from public.usage_log where request_id = ${body.request_id}`
  return { body, inference: usage!.details.inference }
}

describe('a lesson published twice, in the subject inferred from the catalogue', () => {
  it('weighs once: each subject weighs what it weighs without the copy', async () => {
    const question = "Combien d'années dure le mandat du président élu de la République ?"
    const withCopy = await ask(question)
    expect(withCopy.body).toMatchObject({ path: 'answer', reason: 'subject_inferred_from_catalogue', subject: 'instruction-civique' })
    expect(withCopy.body.sources[0].document_id).toBe(docs.civics)
    await db.sql`delete from public.vectors where file_id = ${docs.edition!}`
    await db.sql`delete from public.document_chunks where file_id = ${docs.edition!}`
    await db.sql`delete from public.documents where id = ${docs.edition!}`
    const alone = await ask(question)
    // (the copy's words still count in the catalogue's word rarity, which moves a weight a little)
    expect(Object.keys(withCopy.inference.subjects).sort()).toEqual(Object.keys(alone.inference.subjects).sort())
    for (const [subject, weight] of Object.entries<number>(alone.inference.subjects)) {
      expect(Math.abs(withCopy.inference.subjects[subject] - weight), subject).toBeLessThan(0.05)
    }
  })
})
