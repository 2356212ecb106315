// One search per question whose subject is to be found: public.catalogue_search returns the catalogue's
// hits exactly as hybrid_search ranks them, and, for each subject among those hits, exactly the
// candidates hybrid_search returns once that subject is added to the filters (the retrieval's search),
// figure for figure: the demo curriculum's lessons under their grades and subjects, questions made from
// their sentences (words dropped, words of another lesson mixed in), with and without a grade, at the
// tiers' depths, ranked exactly and through the HNSW index; with the likely subjects only, the same
// lists, the best-voted subject among them. Then the turn: the retrieval takes the
// candidates the inference's search found, and searches again only for what it did not find.
import { readFileSync } from 'node:fs'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createTestDatabase, type TestDatabase } from './helpers/db.ts'
import { createTestApp } from './helpers/app.ts'
import { seedDocument } from './helpers/corpus.ts'
import { CURRICULUM_FILE } from '../scripts/lib/demo-portal.ts'
import { catalogueSearch, hybridSearch } from '../functions-shared/chat/retrieve.ts'
import { prepareQuery, searchCatalogue, searchQuestion } from '../functions-shared/chat/query.ts'
import type { Deps } from '../functions-shared/deps.ts'

let db: TestDatabase
let deps: Deps
const lessons: { grade: string; subject: string; sentences: string[] }[] = []

beforeAll(async () => {
  db = await createTestDatabase()
  deps = createTestApp({ sql: db.sql }).deps
  const curriculum = JSON.parse(readFileSync(CURRICULUM_FILE, 'utf8')) as { lessons: { id: string; path: string; language?: string; pages?: string[] }[] }
  for (const lesson of curriculum.lessons) {
    const [, grade, subject] = lesson.path.split('/')
    if (!grade || !subject || !lesson.pages) continue
    // a chunk per sentence: namespaces of a few chunks and of many
    const sentences = lesson.pages.flatMap((p) => p.split(/(?<=[.!?؟])\s+/u)).filter((s) => s.trim().length > 20)
    const seeded = await seedDocument(db.sql, { name: lesson.id, grade, subject, language: lesson.language ?? 'fr', texts: sentences })
    // an ingested document knows its chunks: a namespace of few chunks is searched through their own search vectors
    await db.sql`update public.documents set chunk_count = ${sentences.length} where id = ${seeded.id}`
    lessons.push({ grade, subject, sentences })
  }
  await db.sql`analyze public.vectors`
}, 120_000)
afterAll(async () => db?.close())

/** Questions from the lessons' sentences: every third word dropped, and a word of another lesson added. */
function questions(): string[] {
  const out: string[] = []
  for (const [i, lesson] of lessons.entries()) {
    const other = lessons[(i * 7 + 3) % lessons.length]!
    for (const [j, sentence] of lesson.sentences.entries()) {
      if (j % 4 !== 1) continue
      const words = sentence.split(/\s+/).filter((_, n) => n % 3 !== 2)
      const borrowed = other.sentences[j % other.sentences.length]!.split(/\s+/).filter((w) => w.length > 5)[0] ?? ''
      out.push(`${words.join(' ')} ${borrowed}`.trim())
    }
  }
  return out
}

async function compare(exactBelow: number) {
  const config = { ...deps.config, RETRIEVAL_EXACT_BELOW: exactBelow }
  const d = { ...deps, config }
  const subjects = [...new Set(lessons.map((l) => l.subject))]
  const grades = [null, ...new Set(lessons.map((l) => l.grade))].slice(0, 4)
  let scopes = 0
  let multi = 0
  let fewer = 0
  for (const [n, question] of questions().entries()) {
    const grade = grades[n % grades.length]!
    const k = [10, 20, 30][n % 3]!
    const [vector] = await d.ai.embed([question])
    const found = await catalogueSearch(d, vector!, question, 12, { grade, language: null }, { subjects, k })
    expect(found.hits).toEqual(await hybridSearch(d, vector!, question, 12, { grade, language: null }))
    const hitSubjects = new Set(found.hits.map((h) => h.subject).filter((s): s is string => !!s))
    for (const subject of hitSubjects) {
      const alone = await hybridSearch(d, vector!, question, k, { grade, subject, language: null }, { coverage: false })
      expect(found.scoped.get(subject) ?? []).toEqual(alone)
      scopes++
    }
    expect([...found.scoped.keys()].every((s) => hitSubjects.has(s))).toBe(true)
    if (hitSubjects.size > 1) multi++
    // only the subjects the hits are likely to choose: the same lists, the best-voted subject among them
    const likely = await catalogueSearch(d, vector!, question, 12, { grade, language: null }, { subjects, k, voters: 6, ratio: 0.8 })
    expect(likely.hits).toEqual(found.hits)
    for (const [subject, list] of likely.scoped) expect(list).toEqual(found.scoped.get(subject))
    const votes = new Map<string, number>()
    for (const [i, h] of found.hits.slice(0, 6).entries()) if (h.subject) votes.set(h.subject, (votes.get(h.subject) ?? 0) + h.text_coverage! / (i + 1))
    const best = [...votes].sort((a, b) => b[1] - a[1])[0]
    if (best && best[1] > 0) expect(likely.scoped.has(best[0])).toBe(true)
    fewer += found.scoped.size - likely.scoped.size
  }
  return { scopes, multi, fewer }
}

describe('public.catalogue_search', () => {
  it('returns the catalogue as hybrid_search ranks it, and each subject of its hits as hybrid_search ranks that subject (exact ranking)', async () => {
    const { scopes, multi, fewer } = await compare(10_000)
    // not a vacuous comparison: many subjects compared, and questions whose hits span several, of
    // which the likely ones are fewer
    expect(scopes).toBeGreaterThan(60)
    expect(multi).toBeGreaterThan(10)
    expect(fewer).toBeGreaterThan(10)
  }, 120_000)

  it('does the same through the HNSW index (a catalogue above RETRIEVAL_EXACT_BELOW)', async () => {
    const { scopes } = await compare(1)
    expect(scopes).toBeGreaterThan(60)
  }, 120_000)
})

describe('the turn searches once', () => {
  it("keeps the subject's candidates with the question, and the retrieval's search takes them", async () => {
    const subjects = [...new Set(lessons.map((l) => l.subject))]
    const question = lessons[0]!.sentences[1]!
    const prepared = await prepareQuery(deps, question, 'fr', { translate: false })
    const hits = await searchCatalogue(deps, prepared, 12, { grade: null, language: null }, { subjects, k: 20 })
    const subject = hits[0]!.subject!
    const statements: string[] = []
    const counted = { ...deps, sql: new Proxy(deps.sql, { apply: (target, self, args) => (statements.push('search'), Reflect.apply(target, self, args)) }) }
    const filters = { grade: null, subject, language: null, fileId: null }
    const candidates = await searchQuestion(counted, prepared, 20, filters, { coverage: false })
    expect(statements).toEqual([])
    expect(candidates).toEqual(await hybridSearch(deps, prepared.vectors[0]!, question, 20, filters, { coverage: false }))
    // another depth (a tier the wallet did not read), or with coverage, is searched
    await searchQuestion(counted, prepared, 10, filters, { coverage: false })
    await searchQuestion(counted, prepared, 20, filters)
    expect(statements).toEqual(['search', 'search'])
  })
})
