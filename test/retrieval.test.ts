// Dense retrieval: nearest chunks first, prefilters that do not starve the result (iterative scan), the
// HNSW index in the plan, and the chunk-text cache keyed on the ingestion timestamp.
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { createTestDatabase, type TestDatabase } from './helpers/db.ts'
import { createTestApp, type TestApp } from './helpers/app.ts'
import { offlineVector } from '../functions-shared/ai/offline-embedder.ts'
import { type ChunkText, chunkTexts, denseSearch, openingSentence, search } from '../functions-shared/chat/retrieve.ts'
import { TtlCache } from '../functions-shared/lib/ttl-cache.ts'
import { AR_LESSON, FR_LESSON, PHYSICS_LESSON } from './helpers/portal.ts'
import { type OpenAiServer, startOpenAiServer } from './helpers/openai-server.ts'
import { reingest, seedDocument, vectorLiteral } from './helpers/corpus.ts'
import { createOpenAiProvider } from '../functions-shared/ai/openai.ts'
import { retrieveAndRerank } from '../functions-shared/chat/rerank.ts'
import type { RetrievalCaches } from '../functions-shared/chat/retrieve.ts'
import { withoutCopies } from '../functions-shared/chat/copies.ts'
import { readFileSync } from 'node:fs'

let db: TestDatabase
let t: TestApp
const docs: Record<string, string> = {}
const vec = vectorLiteral
const sentences = (text: string) => text.split(/(?<=\.) /)

async function addDocument(name: string, grade: string, subject: string, language: string, texts: string[]) {
  docs[name] = (await seedDocument(db.sql, { name, grade, subject, language, texts })).id
}

beforeAll(async () => {
  db = await createTestDatabase()
  t = createTestApp({ sql: db.sql })
  await addDocument('maths', '4AS', 'mathematiques', 'fr', FR_LESSON.split(/(?<=\.) /))
  await addDocument('physique', '5AS', 'physique', 'fr', PHYSICS_LESSON.split(/(?<=\.) /))
  await addDocument('islam', '4AS', 'education-islamique', 'ar', AR_LESSON.split(/(?<=\.) /))
  // noise: many chunks of another subject, so a subject filter is selective
  const noise = Array.from({ length: 300 }, (_, i) => `Histoire ${i} : la période ${i * 7} et ses événements, chapitre ${i % 13}.`)
  await addDocument('histoire', '6AS', 'histoire', 'fr', noise)
  await db.sql`analyze public.vectors`
})
afterAll(async () => db?.close())

describe('denseSearch', () => {
  it('returns the nearest chunks first', async () => {
    const hits = await denseSearch(t.deps, offlineVector("la célérité du son dans l'eau", 1536), 5, {})
    expect(hits[0]!.file_id).toBe(docs.physique)
    expect(hits.map((h) => h.distance)).toEqual([...hits.map((h) => h.distance)].sort((a, b) => a - b))
  })

  it('keeps to the prefilters and still fills K when they are selective', async () => {
    const q = offlineVector('chapitre événements période', 1536)
    const maths = await denseSearch(t.deps, q, 4, { subject: 'mathematiques' })
    expect(maths).toHaveLength(4)
    expect(new Set(maths.map((h) => h.file_id))).toEqual(new Set([docs.maths]))
    const ns = await denseSearch(t.deps, q, 3, { grade: '5AS', subject: 'physique' })
    expect(ns.every((h) => h.namespace === 'grade-5as-physique')).toBe(true)
    const arabic = await denseSearch(t.deps, q, 50, { language: 'ar' })
    expect(arabic.length).toBe(AR_LESSON.split(/(?<=\.) /).length)
    const one = await denseSearch(t.deps, q, 2, { fileId: docs.islam })
    expect(one.every((h) => h.file_id === docs.islam)).toBe(true)
  })

  it('can be served by the HNSW index on the halfvec copies (the planner takes it once the table is large; here sorting is switched off to show it)', async () => {
    const conn = await db.sql.reserve()
    try {
      await conn`begin`
      await conn`set local enable_seqscan = off`
      await conn`set local enable_sort = off`
      const plan = (await conn`explain select id from public.vectors where index_name = 'curriculum-1536'
        order by embedding::extensions.halfvec(1536) operator(extensions.<=>) ${vec('ondes')}::extensions.halfvec(1536) limit 10`).map((r) => r['QUERY PLAN'])
        .join('\n')
      const [index] = await conn`select indexdef from pg_indexes where indexname = 'vectors_embedding_hnsw_idx'`
      await conn`rollback`
      expect(plan).toContain('vectors_embedding_hnsw_idx')
      expect(index!.indexdef).toContain('halfvec_cosine_ops')
    } finally {
      conn.release()
    }
  })
})

describe('match_chunks', () => {
  it("takes the subject's HNSW index with a subject, the index of every chunk without one, the namespace's btree range with a namespace, and restores the planner settings", async () => {
    const conn = await db.sql.reserve()
    try {
      await conn`begin`
      const scans = async () => {
        const [r] = await conn`select pg_stat_get_xact_numscans('public.vectors_embedding_hnsw_idx'::regclass)::int as hnsw,
                                      pg_stat_get_xact_numscans('public.vectors_pkey'::regclass)::int as pkey,
                                      pg_stat_get_xact_numscans(format('public.%I', private.subject_search_index_name('physique'))::regclass)::int as physics`
        return r as { hnsw: number; pkey: number; physics: number }
      }
      const q = vec('les ondes mécaniques')
      const s0 = await scans()
      // p_exact_below 0: the HNSW path even on this small table (whose reltuples analyze has set)
      const bySubject = await conn`select * from public.match_chunks('curriculum-1536', ${q}::extensions.vector, 5, null, null, 'physique', p_exact_below => 0)`
      const s1 = await scans()
      const byNamespace = await conn`select * from public.match_chunks('curriculum-1536', ${q}::extensions.vector, 5, 'grade-5as-physique')`
      const s2 = await scans()
      // no filter at all, past p_exact_below: the index too (a question without grade or subject)
      const unfiltered = await conn`select * from public.match_chunks('curriculum-1536', ${q}::extensions.vector, 5, p_exact_below => 0)`
      const s3 = await scans()
      // below it, every row ranked exactly
      const exact = await conn`select * from public.match_chunks('curriculum-1536', ${q}::extensions.vector, 5, p_exact_below => 1000000)`
      const s4 = await scans()
      expect(await conn`select current_setting('enable_seqscan') as seq, current_setting('enable_sort') as sort`).toEqual([{ seq: 'on', sort: 'on' }])
      await conn`rollback`
      const physics = sentences(PHYSICS_LESSON).length
      expect(bySubject.length).toBe(Math.min(5, physics))
      expect(byNamespace.length).toBe(Math.min(5, physics))
      // the subject's own index, not the index of every chunk
      expect(s1.physics).toBeGreaterThan(s0.physics)
      expect(s1.hnsw).toBe(s0.hnsw)
      expect(s2.hnsw).toBe(s1.hnsw)
      expect(s2.pkey).toBeGreaterThan(s1.pkey)
      expect(unfiltered.length).toBe(5)
      expect(s3.hnsw).toBeGreaterThan(s2.hnsw)
      expect(s3.physics).toBe(s2.physics)
      expect(exact.map((r) => r.id)).toEqual(unfiltered.map((r) => r.id))
      // the index orders by the halfvec copies; the rows carry the exact vector distance, in its order
      expect(unfiltered.map((r) => r.distance)).toEqual(exact.map((r) => r.distance))
      expect(bySubject.map((r) => r.distance)).toEqual([...bySubject.map((r) => r.distance)].sort((a, b) => a - b))
      expect(s4.hnsw).toBe(s3.hnsw)
    } finally {
      conn.release()
    }
  })
})

describe('chunkTexts', () => {
  it('reads the text once, then from the cache; a new ingestion timestamp misses it', async () => {
    const cache = new TtlCache<ChunkText>({ ttlMs: 3_600_000, max: 1000, clock: t.clock })
    const hits = await denseSearch(t.deps, offlineVector('résoudre une équation', 1536), 3, { subject: 'mathematiques' })
    const first = await chunkTexts(t.deps, hits, cache)
    expect(first.map((c) => c.title)).toEqual(['maths', 'maths', 'maths'])
    expect(first[0]!.text.length).toBeGreaterThan(10)
    expect([cache.hits, cache.misses]).toEqual([0, 3])
    await chunkTexts(t.deps, hits, cache)
    expect([cache.hits, cache.misses]).toEqual([3, 3])
    // a re-ingest changes the timestamp the vector metadata carries: the old entries are not served
    const reingested = hits.map((h) => ({ ...h, ingestion_ts: new Date(t.clock.now() + 1000).toISOString() }))
    await db.sql`update public.document_chunks set content = 'texte corrigé après réingestion' where id = ${hits[0]!.chunk_id}`
    const fresh = await chunkTexts(t.deps, reingested, cache)
    expect(fresh[0]!.text).toBe('texte corrigé après réingestion')
    expect(cache.misses).toBe(6)
  })

  it("reads each chunk's lesson topic: its document's opening sentence, whatever page the chunk is on", async () => {
    const doc = await seedDocument(db.sql, {
      name: 'lesson-topic',
      grade: '2AS',
      subject: 'svt-topic',
      language: 'fr',
      texts: [
        'Leçon 5 : la respiration cellulaire. La cellule respire.',
        "Dans la mitochondrie, la respiration libère l'énergie.",
        'Bilan ! Le glucose est oxydé.',
      ],
      pages: [1, 2, 3],
    })
    const cache = new TtlCache<ChunkText>({ ttlMs: 60_000, max: 10, clock: t.clock })
    const hits = await denseSearch(t.deps, offlineVector('la respiration', 1536), 3, { subject: 'svt-topic' })
    const read = await chunkTexts(t.deps, hits, cache)
    expect(read.map((c) => c.file_id)).toEqual([doc.id, doc.id, doc.id])
    expect(read.map((c) => c.topic)).toEqual(Array(3).fill('Leçon 5 : la respiration cellulaire.'))
    // the opening sentence ends at a full stop, a question or exclamation mark, and at 200 characters
    expect(openingSentence('الدرس التاسع: التشبيه. التشبيه من أهم ألوان علم البيان')).toBe('الدرس التاسع: التشبيه.')
    expect(openingSentence("Qu'est-ce qu'une onde ? Une perturbation.")).toBe("Qu'est-ce qu'une onde ?")
    expect(Array.from(openingSentence('x'.repeat(500))!)).toHaveLength(200)
    expect(openingSentence('  ')).toBeNull()
  })

  it('drops chunks of documents that are not ready', async () => {
    const cache = new TtlCache<ChunkText>({ ttlMs: 60_000, max: 10, clock: t.clock })
    const hits = await denseSearch(t.deps, offlineVector('ondes', 1536), 3, { subject: 'physique' })
    await db.sql`update public.documents set status = 'processing' where id = ${docs.physique!}`
    try {
      expect(await chunkTexts(t.deps, hits, cache)).toEqual([])
    } finally {
      await db.sql`update public.documents set status = 'ready' where id = ${docs.physique!}`
    }
  })
})

describe('retrieveAndRerank', () => {
  let server: OpenAiServer
  let app: TestApp
  let caches: RetrievalCaches
  beforeAll(async () => {
    server = await startOpenAiServer()
    const ai = createOpenAiProvider({
      apiKey: 'k',
      baseUrl: server.url,
      chatModel: 'c',
      embeddingModel: 'e',
      rerankModel: 'rerank-model',
      translateModel: 'translate-model',
      dimension: 1536,
      timeoutMs: 5000,
    })
    app = createTestApp({ sql: db.sql, deps: { ai } })
  })
  afterAll(async () => server?.close())
  const fresh = () => {
    caches = {
      chunks: new TtlCache({ ttlMs: 3_600_000, max: 1000, clock: app.clock }),
      rerank: new TtlCache({ ttlMs: 900_000, max: 1000, clock: app.clock }),
      places: new TtlCache({ ttlMs: 10_000, max: 1, clock: app.clock }),
    }
  }
  const rerankCalls = () => server.calls.filter((c) => c.body.model === 'rerank-model').length

  it("translates an Arabic question to French for retrieval and reranks to the tier's N", async () => {
    fresh()
    server.chat = (
      body,
    ) => (body.model === 'translate-model' ? { content: 'Comment résoudre une équation du premier degré ?' } : { content: '{"ranking": [2, 0, 1]}' })
    const r = await retrieveAndRerank(app.deps, {
      message: 'كيف نحل معادلة من الدرجة الأولى؟',
      language: 'ar',
      filters: { subject: 'mathematiques' },
      tier: 'free',
    }, caches)
    expect(r).toMatchObject({ query: 'Comment résoudre une équation du premier degré ?', translated: true, translation_failed: false, rerank: 'model' })
    expect(r.snippets).toHaveLength(3) // free tier: rerank-N 3
    expect(r.snippets.every((s) => s.file_id === docs.maths)).toBe(true)
    const rerankCall = server.calls.findLast((c) => c.body.model === 'rerank-model')!
    expect(rerankCall.body.messages[1].content).toContain('Question: Comment résoudre une équation du premier degré ?')
  })

  it('serves the same question from the rerank cache the second time', async () => {
    fresh()
    server.chat = () => ({ content: '{"ranking": [1, 0]}' })
    const input = { message: 'la célérité des ondes', language: 'fr' as const, filters: { grade: '5AS', subject: 'physique' }, tier: 'standard' as const }
    const first = await retrieveAndRerank(app.deps, input, caches)
    const calls = rerankCalls()
    const second = await retrieveAndRerank(app.deps, input, caches)
    expect(first.rerank).toBe('model')
    expect(second.rerank).toBe('cache')
    expect(rerankCalls()).toBe(calls)
    expect(second.snippets.map((s) => s.chunk_id)).toEqual(first.snippets.map((s) => s.chunk_id))
  })

  it("shows the model a page cut into two windows as one passage, the overlap once and the second window's end too", async () => {
    fresh()
    const sentence = (i: number) => `La phrase ${i} de la leçon sur les marées décrit la Lune et la mer.`
    const first = Array.from({ length: 14 }, (_, i) => sentence(i)).join(' ')
    const overlap = Array.from({ length: 2 }, (_, i) => sentence(12 + i)).join(' ')
    const second = `${overlap} ${Array.from({ length: 12 }, (_, i) => sentence(14 + i)).join(' ')} Fin de la page des marées.`
    await seedDocument(db.sql, {
      name: 'marees',
      grade: '2AS',
      subject: 'physique',
      language: 'fr',
      texts: [first, second, 'Les marées ont deux pleines mers par jour.'],
      pages: [1, 1, 2],
    })
    server.chat = () => ({ content: '{"ranking": [0, 1]}' })
    const r = await retrieveAndRerank(app.deps, {
      message: 'les marées et la Lune',
      language: 'fr',
      filters: { grade: '2AS', subject: 'physique' },
      tier: 'free',
    }, caches)
    expect(r.rerank).toBe('model')
    const prompt = server.calls.findLast((c) => c.body.model === 'rerank-model')!.body.messages[1].content as string
    expect(prompt).toContain('Fin de la page des marées.')
    expect(prompt.split(sentence(13)).length - 1).toBe(1)
    // each passage names its lesson, by the document's opening sentence
    expect(prompt).toContain(`0: (lesson: ${sentence(0)}) `)
    expect(prompt).toContain(`1: (lesson: ${sentence(0)}) `)
    expect(r.snippets.map((s) => s.page_number)).toEqual([1, 2, 1])
  })

  it("falls back to the search's order when the rerank fails or is too slow, and searches the original text when translation fails", async () => {
    fresh()
    server.chat = (body) => (body.model === 'translate-model' ? { status: 500 } : { status: 400 })
    const failed = await retrieveAndRerank(app.deps, { message: 'أركان الإسلام', language: 'ar', filters: {}, tier: 'free' }, caches)
    expect(failed).toMatchObject({ query: 'أركان الإسلام', translated: false, translation_failed: true, rerank: 'fallback_error' })
    expect(failed.cross_lingual).toEqual({ status: 'failed', language: 'fr', query: null })
    const searched = await search(app.deps, offlineVector('أركان الإسلام', 1536), 'أركان الإسلام', 10, {})
    expect(failed.snippets.map((s) => s.chunk_id)).toEqual(searched.slice(0, 3).map((d) => d.chunk_id))

    fresh()
    server.chat = (body) => (body.model === 'translate-model' ? { content: 'المعادلات' } : { content: '{"ranking": [1]}', delayMs: 30_000 })
    const before = rerankCalls()
    const pending = retrieveAndRerank(app.deps, { message: 'les équations', language: 'fr', filters: { subject: 'mathematiques' }, tier: 'free' }, caches)
    // the rerank is in flight; 4.999 s on the clock are not enough, 5 s are
    let settled = false
    void pending.then(() => (settled = true))
    await vi.waitFor(() => expect(rerankCalls()).toBe(before + 1))
    app.clock.advance(4999)
    await new Promise((r) => setTimeout(r, 20))
    expect(settled).toBe(false)
    app.clock.advance(1)
    const slow = await pending
    expect(slow.rerank).toBe('fallback_timeout')
    expect(slow.snippets).toHaveLength(3)
  })
})

describe('a page cut into two chunks', () => {
  it('is reranked as one text: the page that holds the whole question comes before a shorter page that holds more of it than either chunk', async () => {
    // page 1 is two windows that overlap by a sentence, each holding four of the question's seven keys;
    // page 2 is one chunk holding five of them
    const half1 = "Leçon 2. La vitesse moyenne d'un cycliste se calcule en divisant la distance par la durée. Le cycliste part du haut de la côte."
    const half2 = 'Le cycliste part du haut de la côte. Sur une piste en pente, on mesure la durée au chronomètre.'
    const other = "La vitesse moyenne d'un cycliste se calcule aussi sur une piste plate."
    const doc = await seedDocument(db.sql, {
      name: 'cyclisme',
      grade: '3AS',
      subject: 'physique',
      language: 'fr',
      texts: [half1, half2, other],
      pages: [1, 1, 2],
    })
    const caches = (): RetrievalCaches => ({
      chunks: new TtlCache({ ttlMs: 3_600_000, max: 1000, clock: t.clock }),
      rerank: new TtlCache({ ttlMs: 900_000, max: 1000, clock: t.clock }),
      places: new TtlCache({ ttlMs: 10_000, max: 1, clock: t.clock }),
    })
    const question = "Comment calculer la vitesse moyenne d'un cycliste sur une piste en pente avec le chronomètre ?"
    for (const tier of ['free', 'standard'] as const) {
      const r = await retrieveAndRerank(t.deps, { message: question, language: 'fr', filters: { grade: '3AS', subject: 'physique' }, tier }, caches())
      expect(r.snippets.map((s) => s.file_id)).toEqual([doc.id, doc.id, doc.id])
      // one chunk of each page first, then the page's other chunk
      expect(r.snippets.map((s) => s.page_number), tier).toEqual([1, 2, 1])
    }
  })
})

describe('a lesson ingested twice', () => {
  const lessons =
    (JSON.parse(readFileSync(new URL('../demo/curriculum.json', import.meta.url), 'utf8')) as { lessons: { id: string; pages?: string[] }[] }).lessons
  const pagesOf = (id: string) => lessons.find((l) => l.id === id)!.pages!
  const muscle = pagesOf('svt-6c-muscle')
  const respiration = pagesOf('svt-6c-respiration')
  // the copy the duplicate check let through: a header on each page, the last page dropped and one word
  // in seven misread, as a scan's recognizer misreads them
  const misread = (text: string) => text.split(' ').map((w, i) => (i % 7 === 3 ? `${w.slice(0, -1)}ii` : w)).join(' ')
  const copy = muscle.slice(0, -1).map((p) => `Ministère de l'Éducation nationale — édition 2024. ${misread(p)}`)
  const fresh = (): RetrievalCaches => ({
    chunks: new TtlCache({ ttlMs: 3_600_000, max: 1000, clock: t.clock }),
    rerank: new TtlCache({ ttlMs: 900_000, max: 1000, clock: t.clock }),
    places: new TtlCache({ ttlMs: 10_000, max: 1, clock: t.clock }),
  })

  it("answers from the document ingested first, with none of the copy's pages among the sources", async () => {
    // the copy first in the table, the original a day older
    const second = await seedDocument(db.sql, { name: 'muscle-copie', grade: '6C', subject: 'sciences-naturelles', language: 'fr', texts: copy })
    const first = await seedDocument(db.sql, { name: 'muscle', grade: '6C', subject: 'sciences-naturelles', language: 'fr', texts: muscle })
    await reingest(db.sql, first.id, new Map(), new Date(Date.parse(second.ingestionTs) - 86_400_000))
    await seedDocument(db.sql, { name: 'respiration', grade: '6C', subject: 'sciences-naturelles', language: 'fr', texts: respiration })
    for (const question of ["d'où vient l'énergie de la contraction du muscle ?", 'Pendant un effort, le muscle manque-t-il de dioxygène ?']) {
      for (const tier of ['free', 'premium'] as const) {
        const r = await retrieveAndRerank(
          t.deps,
          { message: question, language: 'fr', filters: { grade: '6C', subject: 'sciences-naturelles' }, tier },
          fresh(),
        )
        expect(r.snippets.length, question).toBeGreaterThan(0)
        expect(r.snippets.map((s) => s.file_id), question).not.toContain(second.id)
        expect(r.snippets.some((s) => s.file_id === first.id), question).toBe(true)
      }
    }
  })

  it('keeps the older of a copy and its original at the better rank, and never merges different pages, pages of one document or short passages', () => {
    const c = (file_id: string, text: string, ingestion_ts: string | null = '2026-01-02T00:00:00.000Z') => ({ file_id, text, ingestion_ts })
    const original = c('a', muscle[1]!, '2026-01-01T00:00:00.000Z')
    const itsCopy = c('b', copy[1]!)
    const other = c('a', muscle[2]!, '2026-01-01T00:00:00.000Z')
    expect(withoutCopies([itsCopy, other, original])).toEqual([original, other])
    expect(withoutCopies([original, other, itsCopy])).toEqual([original, other])
    // a document without a timestamp comes after one with it
    expect(withoutCopies([c('z', muscle[1]!, null), c('y', copy[1]!)]).map((x) => x.file_id)).toEqual(['y'])
    // the pages of two lessons that share their vocabulary stay two sources
    const neighbours = [
      c('a', muscle[0]!),
      c('b', respiration[0]!),
      ...respiration.slice(1).map((p, i) => c(`r${i}`, p)),
      ...pagesOf('chimie-7d-acides-bases').map((p, i) => c(`ab${i}`, p)),
      ...pagesOf('chimie-7d-acides-faibles').map((p, i) => c(`af${i}`, p)),
    ]
    expect(withoutCopies(neighbours)).toEqual(neighbours)
    // one document's repeated page stays (it is the document's own), and a short passage is no copy
    const same = [c('a', muscle[1]!), c('a', muscle[1]!)]
    expect(withoutCopies(same)).toEqual(same)
    const short = [c('a', 'Leçon 4 : le muscle strié squelettique.'), c('b', 'Leçon 4 : le muscle strié squelettique.')]
    expect(withoutCopies(short)).toEqual(short)
  })
})
