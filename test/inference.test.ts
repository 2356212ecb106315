// Finding the lesson: public.hybrid_search (folded, stemmed full-text search fused with the vectors, its
// document-frequency table, its prefilters), the subject inferred from the catalogue through POST /chat
// (a portal with its own subject slugs, small talk, clarifying questions that offer what the catalogue
// has), cross-lingual search with a translating provider (the OpenAI-compatible test server) and the
// offline provider's honest "not possible", and the small pure parts (named subjects, small talk,
// language markers, fusion, the offline rerank's keys).
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { createTestDatabase, type TestDatabase } from './helpers/db.ts'
import { testConfig } from './helpers/app.ts'
import { createUser } from './helpers/users.ts'
import { seedDocument, vectorLiteral } from './helpers/corpus.ts'
import { type OpenAiServer, startOpenAiServer } from './helpers/openai-server.ts'
import { type Gateway, startGateway } from '../scripts/lib/gateway.ts'
import { createLogRoot } from '../functions-shared/lib/logger.ts'
import { createOpenAiProvider } from '../functions-shared/ai/openai.ts'
import { createOfflineProvider } from '../functions-shared/ai/offline.ts'
import { contentKeys, keyCoverage, matchKey, questionKeys, textKeys } from '../functions-shared/text/keys.ts'
import { namedSubjects, subjectKey } from '../functions-shared/text/subjects.ts'
import { isSmallTalk } from '../functions-shared/chat/small-talk.ts'
import { detectLanguage } from '../functions-shared/chat/language.ts'
import { fuseLists } from '../functions-shared/chat/query.ts'
import type { Candidate } from '../functions-shared/chat/retrieve.ts'

let db: TestDatabase
const docs: Record<string, string> = {}

// a small catalogue whose subject slugs are the portal's own, not the names the code knows best
const ZAKAT = [
  'الزكاة ركن من أركان الإسلام، وهي حق واجب في المال إذا بلغ النصاب وحال عليه الحول.',
  'نصاب الفضة مائتا درهم، ونصاب الذهب عشرون دينارا، والقدر الواجب ربع العشر.',
  'تصرف الزكاة للأصناف الثمانية المذكورة في القرآن: الفقراء والمساكين والعاملين عليها.',
]
const RIVER = [
  'Le fleuve Sénégal prend sa source dans le massif du Fouta-Djalon et traverse quatre pays.',
  'La crue du fleuve arrive en saison des pluies ; les cultures de décrue occupent ensuite les terres inondées.',
  "Le barrage de Manantali régularise le débit du fleuve et produit de l'électricité.",
]
const KINEMATICS = [
  "Un référentiel galiléen est un référentiel dans lequel le principe d'inertie est vérifié.",
  'Le vecteur vitesse est la dérivée du vecteur position par rapport au temps.',
  "Dans un mouvement rectiligne uniformément varié, l'accélération est constante et x(t) = ½ a t² + v0 t + x0.",
]
const DERIVATIVES = [
  "La dérivée d'une fonction f en a est la limite du taux d'accroissement lorsque h tend vers 0.",
  "La dérivée du produit u v est u' v + u v' ; celle du quotient u / v est (u' v - u v') / v².",
]
// a lesson that exists in Arabic only (the cross-lingual case)
const HISTORY_AR = [
  'نشأت حركة المرابطين في القرن الخامس الهجري على يد عبد الله بن ياسين.',
  'انتصر المرابطون بقيادة يوسف بن تاشفين في معركة الزلاقة سنة 1086 م.',
]

beforeAll(async () => {
  db = await createTestDatabase({ poolMax: 6 })
  for (
    const [name, grade, subject, language, texts] of [
      ['Tarbiya 5AS', '5AS', 'tarbiya-islamiya', 'ar', ZAKAT],
      ['Géographie 5AS', '5AS', 'geographie', 'fr', RIVER],
      ['Sciences physiques 6C', '6C', 'sciences-physiques', 'fr', KINEMATICS],
      ['Mathématiques 7C', '7C', 'mathematiques', 'fr', DERIVATIVES],
      ['Tarikh 7D', '7D', 'tarikh', 'ar', HISTORY_AR],
    ] as const
  ) {
    docs[subject] = (await seedDocument(db.sql, { name, grade, subject, language, texts: [...texts] })).id
  }
})
afterAll(async () => db?.close())

const hybrid = (query: string, filters: { subject?: string; grade?: string } = {}) =>
  db.sql`select * from public.hybrid_search('curriculum-1536', ${vectorLiteral(query)}::extensions.vector, ${query}, 5,
                                           null, ${filters.grade ?? null}, ${filters.subject ?? null}, null, null, 10, 10, 60, 1, 1)`

describe('public.hybrid_search', () => {
  it('matches French without accents and with other inflections, and says how much of the question a chunk holds', async () => {
    const rows = await hybrid('referentiels galileens')
    expect(rows[0]!.file_id).toBe(docs['sciences-physiques'])
    expect(rows[0]!.page_number).toBe(1)
    expect(Number(rows[0]!.text_rank)).toBe(1)
    expect(Number(rows[0]!.text_coverage)).toBeGreaterThan(0.9)
    // a chunk found by the vectors alone holds none of the question's words
    const unrelated = rows.find((r) => r.text_rank === null)
    if (unrelated) expect(Number(unrelated.text_coverage)).toBe(0)
  })

  it('reads no search vector for rows the text branch did not find when coverage is not asked for', async () => {
    const query = 'la dérivée du vecteur position'
    const withCoverage = await hybrid(query)
    const without = await db.sql`select * from public.hybrid_search('curriculum-1536', ${vectorLiteral(query)}::extensions.vector, ${query}, 5,
                                   null, null, null, null, null, 10, 10, 60, 1, 1, p_coverage => false)`
    expect(without.map((r) => r.id)).toEqual(withCoverage.map((r) => r.id))
    for (const [i, r] of without.entries()) {
      if (r.text_rank === null) expect(Number(r.text_coverage)).toBe(0)
      else expect(Number(r.text_coverage)).toBeCloseTo(Number(withCoverage[i]!.text_coverage), 10)
    }
  })

  it('folds Arabic (hamza forms, taa marbuta, the article and clitics) in the query as in the chunks', async () => {
    // "والزكاه" (clitic, article, taa marbuta written as ha), "النّصاب" with a shadda
    const rows = await hybrid('والزكاه النّصاب')
    expect(rows[0]!.file_id).toBe(docs['tarbiya-islamiya'])
    expect(Number(rows[0]!.text_rank)).toBe(1)
    const hamza = await hybrid('اركان الاسلام')
    expect(hamza[0]!.file_id).toBe(docs['tarbiya-islamiya'])
    expect(Number(hamza[0]!.text_coverage)).toBeGreaterThan(0.9)
  })

  it('gives an Arabic word one lexeme with or without its article, behind و or not', async () => {
    const lexemes = async (text: string) => (await db.sql<{ v: string }[]>`select private.search_vector(${text})::text as v`)[0]!.v.replace(/:\d+(,\d+)*/g, '')
    // the stemmer alone gave جوب and وجوب, زير and وزير, ولا ("and not") and ولايه, ولا and ولات
    for (const [bare, other] of [['وجوب', 'الوجوب'], ['وزير', 'والوزير'], ['ولاية', 'الولاية'], ['ولاتة', 'وولاتة'], ['واجب', 'بالواجب'], ['وقت', 'الوقت']]) {
      expect(await lexemes(other!), `${bare} / ${other}`).toBe(await lexemes(bare!))
    }
    expect(await lexemes('ولاية')).not.toBe(await lexemes('ولا'))
    expect(await lexemes('وقت')).toBe("'وقت'")
    expect(await lexemes('التي الذي')).toBe('')
  })

  it('reads a word with a format character inside it (a zero-width joiner, a soft hyphen, a bidi mark) as the word', async () => {
    const lexemes = async (text: string) => (await db.sql<{ v: string }[]>`select private.search_vector(${text})::text as v`)[0]!.v
    // a text layer or a keyboard wrote them inside the word; the form cut it in two there
    for (
      const [plain, marked] of [['الإسلام', 'الإس\u200Cلام'], ['الإسلام', 'ال\u200Dإسلام'], ['équation', 'équa\u00ADtion'], ['équation', '\u200Féquation\u200E'], [
        'النصاب',
        'الن\u2060صاب\uFEFF',
      ]]
    ) {
      expect(await lexemes(marked!), JSON.stringify(marked)).toBe(await lexemes(plain!))
    }
    // the zero-width space parts words, as a space does
    expect(await lexemes('équation\u200Binconnue')).toBe(await lexemes('équation inconnue'))
  })

  it('reads the Persian yeh and keheh that some typesetting writes for Arabic letters as those letters', async () => {
    // "المساكين" as a Persian-locale tool writes it: keheh (U+06A9) for kaf, farsi yeh (U+06CC) for yeh
    const rows = await hybrid('الفقراء والمسا\u06A9\u06CCن')
    expect(rows[0]!.file_id).toBe(docs['tarbiya-islamiya'])
    expect(rows[0]!.page_number).toBe(3)
    expect(Number(rows[0]!.text_rank)).toBe(1)
    expect(Number(rows[0]!.text_coverage)).toBeGreaterThan(0.9)
  })

  it('keeps to the prefilters in both branches', async () => {
    const rows = await hybrid('la dérivée du vecteur position', { subject: 'mathematiques' })
    expect(rows.length).toBeGreaterThan(0)
    expect(rows.every((r) => r.file_id === docs.mathematiques)).toBe(true)
    expect(await hybrid('la dérivée', { grade: '9Z' })).toHaveLength(0)
  })

  it("reads a small prefiltered set's own search vectors, with the same answer as the postings", async () => {
    const byNamespace = () =>
      db.sql`select id, text_rank, text_coverage from public.hybrid_search('curriculum-1536', ${vectorLiteral('vitesse dérivée position')}::extensions.vector,
                                        'vitesse dérivée position', 5, 'grade-6c-sciences-physiques', null, null, null, null, 5, 5, 60, 1, 1)`
    const postings = await byNamespace() // no chunk count: read as large, so through the postings
    await db.sql`update public.documents set chunk_count = 3 where id = ${docs['sciences-physiques']!}`
    try {
      const own = await byNamespace()
      expect(own).toEqual(postings)
      expect(own.filter((r) => r.text_rank !== null).length).toBeGreaterThan(0)
    } finally {
      await db.sql`update public.documents set chunk_count = null where id = ${docs['sciences-physiques']!}`
    }
  })

  it('lets the rarest words make the match within the postings budget', async () => {
    const seeded = await seedDocument(db.sql, {
      name: 'Budget',
      grade: '9B',
      subject: 'zzz-budget',
      language: 'fr',
      texts: ['zorglub un', 'zorglub deux', 'zorglub trois', 'zorglub wibbly quatre'],
    })
    const textRows = async (budget: number) =>
      (await db.sql`select id, text_rank from public.hybrid_search('curriculum-1536', ${
        vectorLiteral('zorglub wibbly')
      }::extensions.vector, 'zorglub wibbly', 10,
                                                                    null, '9B', null, null, null, 10, 10, 60, 1, 1, p_text_common => 1, p_text_postings => ${budget})`)
        .filter((r) => r.text_rank !== null)
        .map((r) => r.id as string)
        .sort()
    // budget 1: only "wibbly" (one chunk) makes the match; 10: "zorglub" too
    expect(await textRows(1)).toEqual(['Budget-3'])
    expect(await textRows(10)).toEqual(['Budget-0', 'Budget-1', 'Budget-2', 'Budget-3'])
    await db.sql`delete from public.vectors where file_id = ${seeded.id}`
    await db.sql`delete from public.document_chunks where file_id = ${seeded.id}`
    await db.sql`delete from public.documents where id = ${seeded.id}`
  })

  it('keeps the document frequency of every lexeme as chunks come and go', async () => {
    const total = async () => Number((await db.sql`select chunks from private.search_lexemes where lexeme = ''`)[0]!.chunks)
    const chunks = async () => Number((await db.sql`select count(*) from public.document_chunks`)[0]!.count)
    expect(await total()).toBe(await chunks())
    const seeded = await seedDocument(db.sql, {
      name: 'Éphémère',
      grade: '5AS',
      subject: 'zzz-test',
      language: 'fr',
      texts: ['Le quokka sourit.', 'Un quokka dort.'],
    })
    const df = async () =>
      Number((await db.sql`select coalesce(max(chunks), 0) as n from private.search_lexemes where lexeme = 'quokk' or lexeme like 'quokka%'`)[0]!.n)
    expect(await df()).toBe(2)
    expect(await total()).toBe(await chunks())
    await db.sql`delete from public.vectors where file_id = ${seeded.id}`
    await db.sql`delete from public.document_chunks where file_id = ${seeded.id}`
    await db.sql`delete from public.documents where id = ${seeded.id}`
    expect(await df()).toBe(0)
    expect(await total()).toBe(await chunks())
  })
})

interface Stack {
  gw: Gateway
}
async function stack(ai: ReturnType<typeof createOfflineProvider>, env: Record<string, string> = {}): Promise<Stack> {
  const config = testConfig({ LOG_LEVEL: 'silent', EXPIRY_INTERVAL_SECONDS: '0', ...env })
  return { gw: await startGateway({ config, sql: db.connect(3), port: 0, deps: { ai, logs: createLogRoot({ level: 'silent' }), sources: [] } }) }
}
const ask = async (s: Stack, token: string, body: Record<string, unknown>) => {
  const res = await fetch(`${s.gw.url}/functions/v1/chat`, {
    method: 'POST',
    headers: { Authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify({ stream: false, ...body }),
  })
  expect(res.status).toBe(200)
  return res.json() as Promise<Record<string, any>>
}

describe('POST /chat infers the subject from the catalogue (offline provider)', () => {
  let s: Stack
  let token: string
  beforeAll(async () => {
    s = await stack(createOfflineProvider())
  })
  // a student per test: the welcome bonus covers a few answers
  beforeEach(async () => {
    token = (await createUser(db.sql)).token
  })
  afterAll(async () => s?.gw.close())

  it("finds a lesson whatever form of its grade and subject a request names: the portal's slug, the catalogue's, a name in Arabic", async () => {
    const student = await createUser(db.sql)
    await db.sql`select * from public.top_up(${student.id}, 1000, 0, 'MRU', 'cash', null, 'test')`
    // stored as the portal gave them (tarbiya-islamiya, sciences-physiques), before the catalogue's forms
    for (
      const [grade, subject, doc] of [
        ['5AS', 'tarbiya-islamiya', 'tarbiya-islamiya'],
        ['5eme-AS', 'education-islamique', 'tarbiya-islamiya'],
        ['5-as', 'التربية الإسلامية', 'tarbiya-islamiya'],
        ['6C', 'physique', 'sciences-physiques'],
        ['6eme-C', 'Sciences Physiques', 'sciences-physiques'],
      ] as const
    ) {
      const message = doc === 'tarbiya-islamiya' ? 'ما هو نصاب الفضة؟' : "Qu'est-ce qu'un référentiel galiléen ?"
      const body = await ask(s, student.token, { message, grade, subject })
      expect(body, `${grade} ${subject}`).toMatchObject({
        path: 'answer',
        reason: 'subject_given',
        subject: doc,
        grade: doc === 'tarbiya-islamiya' ? '5AS' : '6C',
      })
      expect(body.sources.length).toBeGreaterThan(0)
      expect(body.sources.every((x: { document_id: string }) => x.document_id === docs[doc])).toBe(true)
    }
    // the catalogue's listing reads them the same way
    const listed = async (query: string) =>
      ((await (await fetch(`${s.gw.url}/functions/v1/curriculum/textbooks?${query}`)).json()) as { textbooks: { id: string }[] }).textbooks.map((t) => t.id)
    expect(await listed(`grade=${encodeURIComponent('5ème AS')}&subject=education-islamique`)).toEqual([docs['tarbiya-islamiya']])
    expect(await listed('grade=6C&subject=physique')).toEqual([docs['sciences-physiques']])
    expect(await listed('subject=histoire')).toEqual([docs.tarikh])
    expect(await listed('grade=7C&subject=physique')).toEqual([])
  })

  it('answers from a subject whose slug the code has never seen, with the reason recorded', async () => {
    const river = await ask(s, token, { message: 'À quelle saison le fleuve déborde-t-il sur les terres ?' })
    expect(river).toMatchObject({ path: 'answer', reason: 'subject_inferred_from_catalogue', subject: 'geographie' })
    expect(river.sources[0].document_id).toBe(docs.geographie)
    const zakat = await ask(s, token, { message: 'ما هو نصاب الفضة والذهب في الزكاة؟' })
    expect(zakat).toMatchObject({ path: 'answer', reason: 'subject_inferred_from_catalogue', subject: 'tarbiya-islamiya' })
    expect(zakat.sources[0]).toMatchObject({ document_id: docs['tarbiya-islamiya'], page_number: 2 })
  })

  it('takes kinematics to physics and derivatives to mathematics, though both speak of derivatives', async () => {
    const physics = await ask(s, token, { message: "Qu'est-ce qu'un référentiel galiléen ?" })
    expect(physics).toMatchObject({ subject: 'sciences-physiques', reason: 'subject_inferred_from_catalogue' })
    expect(physics.sources[0]).toMatchObject({ document_id: docs['sciences-physiques'], page_number: 1 })
    const maths = await ask(s, token, { message: 'comment dériver un produit de deux fonctions u fois v ?' })
    expect(maths.subject).toBe('mathematiques')
    expect(maths.sources[0]).toMatchObject({ document_id: docs.mathematiques, page_number: 2 })
  })

  it("asks, for 2 tokens, what a greeting or an off-curriculum message is about, offering the catalogue's subjects in the question's language", async () => {
    const hello = await ask(s, token, { message: 'Bonjour ! Merci beaucoup' })
    expect(hello).toMatchObject({ path: 'clarify', reason: 'small_talk', outcome: 'clarified', usage: { charged: 2 } })
    expect(hello.answer).toContain('géographie')
    expect(hello.answer).toContain('5AS')
    const off = await ask(s, token, { message: 'Xylophone quasar zeppelin ?' })
    expect(off).toMatchObject({ path: 'clarify', reason: 'no_match', usage: { charged: 2 } })
    const ar = await ask(s, token, { message: 'السلام عليكم ورحمة الله وبركاته' })
    expect(ar).toMatchObject({ path: 'clarify', reason: 'small_talk', language: 'ar' })
    // the portal's slug for Islamic education is named as that subject, in Arabic
    expect(ar.answer).toContain('التربية الإسلامية')
  })

  it('reads a word with an invisible character inside (a zero-width joiner or non-joiner, a soft hyphen, a bidi mark) as the word', async () => {
    for (
      const [plain, marked] of [
        ['ما هو نصاب الفضة والذهب في الزكاة؟', 'ما هو ن\u200Cصاب الفض\u200Dة والذهب في الز\u200Cكاة؟'],
        ['À quelle saison le fleuve déborde-t-il sur les terres ?', 'À quelle sai\u00ADson le fleu\u2060ve dé\u00ADborde-t-il sur les ter\u200Fres ?'],
      ]
    ) {
      const expected = await ask(s, token, { message: plain })
      const got = await ask(s, token, { message: marked })
      expect(got).toMatchObject({ path: 'answer', reason: 'subject_inferred_from_catalogue', subject: expected.subject, answer: expected.answer })
      expect(got.sources.map((x: { chunk_id: string; excerpt: string }) => [x.chunk_id, x.excerpt])).toEqual(
        expected.sources.map((x: { chunk_id: string; excerpt: string }) => [x.chunk_id, x.excerpt]),
      )
    }
  })

  it('says in the metadata that cross-lingual retrieval was not possible', async () => {
    const body = await ask(s, token, { message: 'la bataille de Zallaqa', grade: '7D', subject: 'tarikh' })
    expect(body.retrieval.cross_lingual).toEqual({ status: 'not_possible', language: 'ar', query: null })
  })
})

describe('cross-lingual retrieval with a provider that translates', () => {
  let server: OpenAiServer
  let s: Stack
  let token: string
  beforeAll(async () => {
    server = await startOpenAiServer()
    s = await stack(
      createOpenAiProvider({
        apiKey: 'k',
        baseUrl: server.url,
        chatModel: 'chat-model',
        embeddingModel: 'embed-model',
        rerankModel: 'rerank-model',
        translateModel: 'translate-model',
        dimension: 1536,
        timeoutMs: 10_000,
      }),
    )
  })
  beforeEach(async () => {
    token = (await createUser(db.sql)).token
  })
  afterAll(async () => {
    await s?.gw.close()
    await server?.close()
  })

  it('finds a lesson that exists only in Arabic from a French question, and the reverse', async () => {
    server.chat = (body) =>
      body.model === 'translate-model'
        ? { content: body.messages.at(-1).content.includes('Zallaqa') ? 'من انتصر في معركة الزلاقة؟' : 'Quand la crue du fleuve arrive-t-elle ?' }
        : body.model === 'rerank-model'
        ? { content: '{"ranking": [0, 1, 2]}' }
        : { content: 'Réponse [1].' }
    const before = server.calls.length
    const fr = await ask(s, token, { message: 'Qui a gagné la bataille de Zallaqa ?' })
    const translate = server.calls.slice(before).find((c) => c.body.model === 'translate-model')!
    expect(translate.body.messages[0].content).toContain('from fr to ar')
    expect(fr.retrieval.cross_lingual).toEqual({ status: 'searched', language: 'ar', query: 'من انتصر في معركة الزلاقة؟' })
    expect(fr).toMatchObject({ path: 'answer', subject: 'tarikh' })
    expect(fr.sources[0]).toMatchObject({ document_id: docs.tarikh, page_number: 2 })

    const ar = await ask(s, token, { message: 'متى يفيض النهر؟', grade: '5AS', subject: 'geographie' })
    expect(ar.retrieval.cross_lingual).toEqual({ status: 'searched', language: 'fr', query: 'Quand la crue du fleuve arrive-t-elle ?' })
    expect(ar.sources[0]).toMatchObject({ document_id: docs.geographie, page_number: 2 })
  })

  it("does not translate when the search keeps to documents in the question's own language", async () => {
    const before = server.calls.length
    const body = await ask(s, token, { message: 'كم نصاب الفضة؟', grade: '5AS', subject: 'tarbiya-islamiya', document_language: 'ar' })
    expect(body.retrieval.cross_lingual).toEqual({ status: 'not_needed', language: 'fr', query: null })
    expect(server.calls.slice(before).some((c) => c.body.model === 'translate-model')).toBe(false)
    expect(body.sources[0].document_id).toBe(docs['tarbiya-islamiya'])
  })
})

describe("the subject's votes in the order of the provider's rerank (CHAT_INFER_RERANK)", () => {
  let server: OpenAiServer
  beforeAll(async () => {
    server = await startOpenAiServer()
    // the rerank puts the passages about speed first, the search's order the lesson on derivatives
    server.chat = (body) => {
      if (body.model !== 'rerank-model') return { content: 'Réponse [1].' }
      const passages = [...String(body.messages.at(-1).content).matchAll(/^(\d+): (.*)$/gm)].map((m) => ({
        i: Number(m[1]),
        speed: /vitesse|accélération|référentiel/.test(m[2]!),
      }))
      return { content: JSON.stringify({ ranking: [...passages.filter((p) => p.speed), ...passages.filter((p) => !p.speed)].map((p) => p.i) }) }
    }
  })
  afterAll(async () => server?.close())
  const provider = () =>
    createOpenAiProvider({
      apiKey: 'k',
      baseUrl: server.url,
      chatModel: 'chat-model',
      embeddingModel: 'embed-model',
      rerankModel: 'rerank-model',
      translateModel: 'translate-model',
      dimension: 1536,
      timeoutMs: 10_000,
    })
  const rerankCalls = (from: number) => server.calls.slice(from).filter((c) => c.body.model === 'rerank-model').length
  const question = { message: 'La dérivée, à quoi elle sert et comment on la calcule ?', document_language: 'fr' }

  it("follows the search's order with a model's rerank unless told to (auto, off), and the rerank's when on", async () => {
    const token = (await createUser(db.sql)).token
    const results: Record<string, { subject: string; calls: number }> = {}
    for (const mode of ['auto', 'off', 'on']) {
      const s = await stack(provider(), { CHAT_INFER_RERANK: mode })
      try {
        const before = server.calls.length
        const body = await ask(s, token, question)
        results[mode] = { subject: body.subject, calls: rerankCalls(before) }
      } finally {
        await s.gw.close()
      }
    }
    // the search's order: the lesson on derivatives; one rerank, the answer's
    expect(results.auto).toEqual({ subject: 'mathematiques', calls: 1 })
    expect(results.off).toEqual({ subject: 'mathematiques', calls: 1 })
    // the rerank's: speed first, so physics; one rerank more, the subject's
    expect(results.on).toEqual({ subject: 'sciences-physiques', calls: 2 })
  })

  it("keeps the search's order when the rerank fails", async () => {
    const token = (await createUser(db.sql)).token
    const ok = server.chat
    server.chat = (body) => (body.model === 'rerank-model' ? { status: 500 } : { content: 'Réponse [1].' })
    const s = await stack(provider(), { CHAT_INFER_RERANK: 'on' })
    try {
      expect((await ask(s, token, question)).subject).toBe('mathematiques')
    } finally {
      server.chat = ok
      await s.gw.close()
    }
  })
})

describe('the small parts', () => {
  it('names the catalogue subjects a question names, known or not', () => {
    const catalogue = ['tarbiya-islamiya', 'geographie', 'sciences-physiques', 'histoire-geo']
    expect(subjectKey('tarbiya-islamiya')).toBe('education-islamique')
    expect(subjectKey('svt')).toBe('sciences-naturelles')
    expect(subjectKey('astronomie')).toBeNull()
    expect(namedSubjects('في التربية الإسلامية، ما هو النصاب؟', catalogue)).toEqual(['tarbiya-islamiya'])
    expect(namedSubjects('En géographie, où est le barrage ?', catalogue)).toContain('geographie')
    expect(namedSubjects('une question de histoire geo', catalogue)).toContain('histoire-geo')
    expect(namedSubjects('quelle est la vitesse ?', catalogue)).toEqual([])
  })

  it('tells small talk from a question', () => {
    for (const t of ['Bonjour, ça va ?', 'merci beaucoup !', 'السلام عليكم ورحمة الله', 'شكرا جزيلا', 'شحالك؟ لاباس عليك؟', 'ok']) {
      expect(isSmallTalk(t)).toBe(true)
    }
    for (const t of ["Bonjour, c'est quoi un référentiel ?", 'السلام عليكم، ما هي أركان الإسلام؟', 'merci, et la dérivée de x² ?', '', '?!']) {
      expect(isSmallTalk(t)).toBe(false)
    }
  })

  it('hears Hassaniya in its question words, also behind a conjunction', () => {
    expect(detectLanguage('انتوم تصلو شحال من صلاة فالنهار؟')).toBe('hassaniya')
    expect(detectLanguage('الماتش ما شفتو، منهو اللي ربح؟')).toBe('hassaniya')
    expect(detectLanguage('وشنهو الفرق بينهم؟')).toBe('hassaniya')
    expect(detectLanguage('من هو أول رئيس لموريتانيا؟')).toBe('ar')
    expect(detectLanguage('أين يقع نهر السنغال؟')).toBe('ar')
  })

  it("fuses the lists of the question's forms by best rank, then by text coverage", () => {
    const c = (id: string, distance: number, coverage?: number): Candidate => ({
      chunk_id: id,
      file_id: 'f',
      namespace: 'n',
      distance,
      page_number: 1,
      source_url: null,
      ingestion_ts: null,
      ...(coverage === undefined ? {} : { text_coverage: coverage }),
    })
    const fused = fuseLists([[c('a', 0.5, 0.1), c('b', 0.4)], [c('b', 0.2, 0.8), c('c', 0.3)]], 60, 10)
    expect(fused.map((x) => x.chunk_id)).toEqual(['b', 'a', 'c'])
    expect(fused[0]).toMatchObject({ distance: 0.2, text_coverage: 0.8 })
    expect(fused[0]!.score).toBeCloseTo(1 / 61, 10)
    // found first by one form only, it is not outranked by what both forms found lower
    const one = fuseLists([[c('p', 0.3), c('q', 0.3), c('r', 0.3)], [c('x', 0.6, 1), c('p', 0.3), c('q', 0.3)]], 60, 10)
    expect(one.slice(0, 2).map((x) => x.chunk_id)).toEqual(['x', 'p'])
    expect(fuseLists([[c('x', 0.1), c('y', 0.2)]], 60, 1).map((x) => x.chunk_id)).toEqual(['x'])
  })

  it('ranks by the share of stemmed question words a candidate holds (offline rerank)', () => {
    expect(matchKey('équations')).toBe(matchKey('equation'))
    expect(matchKey('والزكاة')).toBe(matchKey('الزكاه'))
    expect(matchKey('de')).toBeNull()
    // light10's Arabic stemming: the article with its particle, each suffix in turn, the accusative alef
    expect(new Set(['الفرنسي', 'الفرنسيون', 'فرنسا'].map(matchKey)).size).toBe(1)
    expect(matchKey('مركزا')).toBe(matchKey('المركز'))
    expect(matchKey('بالسلاح')).toBe(matchKey('السلاح'))
    expect(matchKey('وللفقراء')).toBe(matchKey('الفقراء'))
    // a word that begins with و has one key with the article or without, and behind another و
    expect(matchKey('واجب')).toBe(matchKey('الواجب'))
    expect(matchKey('وجوب')).toBe(matchKey('بالوجوب'))
    expect(matchKey('ولاتة')).toBe(matchKey('وولاتة'))
    expect(matchKey('وقت')).toBe(matchKey('الوقت'))
    // a single ف, ب or ل is no prefix (it begins فرنسي, بيت, لبن)
    expect(matchKey('فرنسي')).toBe('فرنس')
    expect(matchKey('بيوت')).toBe('بيوت')
    // the name of God is a word of its own, not the article before له ("to him")
    expect(matchKey('والله')).toBe(matchKey('الله'))
    expect(matchKey('الله')).not.toBe(matchKey('له'))
    expect(keyCoverage('ما حكمة الله من الزكاة؟', ['ما له من مال'])).toEqual([0])
    // a preposition with a pronoun (منها, عليه, لهم) is a function word; بنى ("built") is not one
    expect(keyCoverage('لماذا تجب الزكاة عليه وما الحكمة منها؟', ['ذهب منها وعليه لهم'])).toEqual([0])
    expect(keyCoverage('من بنى مراكش؟', ['بنى يوسف بن تاشفين مراكش'])).toEqual([1])
    // nor do the fillers of a Hassaniya question that the search leaves out too: گول ("tell") is قول folded
    expect(keyCoverage('گول لي أركان الإسلام گاع', ['وفي القول الآخر', 'أركان الإسلام خمسة'])).toEqual([0, 1])
    // function words do not count: "quelle est" holds nothing of the lesson
    expect(keyCoverage('quelle est la vitesse', ['La vitesse du son.', 'Quelle est la question ?'])).toEqual([1, 0])
    // a letter alone names a quantity in a formula and counts; one that is a French word or an elision does not
    expect(['x', 'T', 'u', 'v', 'f', 'Δ', 'λ'].map(matchKey)).toEqual(['x', 't', 'u', 'v', 'f', 'δ', 'λ'])
    expect(['a', 'à', 'y', 'l', 'd', 's', 'n', 'c', 'j', 'm'].map(matchKey)).toEqual(Array(10).fill(null))
    expect(keyCoverage('comment on dérive un produit u fois v ?', ["La dérivée d'une fonction en a.", "La dérivée de (u v) est u' v + u v'."])).toEqual([
      0.2,
      0.6,
    ])
    expect(keyCoverage("il y a l'accélération", ['Il y a une accélération.'])).toEqual([1])
    // two letters are a symbol or a unit (pH, Ka, Ec, kJ, OH) and count, unless they are a French word
    expect(['pH', 'Ka', 'Ec', 'kJ', 'OH', 'km'].map(matchKey)).toEqual(['ph', 'ka', 'ec', 'kj', 'oh', 'km'])
    expect(['de', 'La', 'un', 'où', 'ça', 'qu', 'Si', 'né'].map(matchKey)).toEqual(Array(8).fill(null))
    expect(keyCoverage('le ph de la solution', ['La solution de pH 3 est acide.', 'La solution est diluée.'])).toEqual([1, 0.5])
    const [a, b] = keyCoverage('équations premier degré', ['Une équation du premier degré.', 'Le mouvement rectiligne.'])
    expect(a).toBeCloseTo(1, 5)
    expect(b).toBe(0)
  })

  it('reads a letter written onto an Arabic word of the question as the candidates read it (offline rerank)', async () => {
    const vocabulary = (...texts: string[]) => new Set(texts.flatMap(contentKeys))
    // a preposition or conjunction written onto the word (بمثال, فبحرنا), a pronoun or the Hassaniya -و at its end
    expect(questionKeys('الحوت فبحرنا كثير', vocabulary('البحر واسع'))).toEqual(new Set([matchKey('الحوت'), matchKey('البحر'), matchKey('كثير')]))
    expect(questionKeys('فسرهالي بمثال', vocabulary('مثال ذلك'))).toContain(matchKey('مثال'))
    expect(questionKeys('شنهو يلزمو؟', vocabulary('يلزمه القضاء'))).toEqual(new Set([matchKey('يلزمه')]))
    // only when the texts hold that word and not the word as written: بحر and فرض keep their letters
    expect(questionKeys('فبحرنا', vocabulary('الحوت'))).toEqual(new Set([matchKey('فبحرنا')]))
    expect(questionKeys('فرض الزكاة', vocabulary('رض الزكاة'))).toEqual(new Set([matchKey('فرض'), matchKey('الزكاة')]))
    expect(questionKeys('بمثال', vocabulary('بمثال مثال'))).toEqual(new Set([matchKey('بمثال')]))
    // the rerank reads the question so: the page of the sea and its fish comes first
    const provider = createOfflineProvider()
    expect(await provider.rerank('الحوت فبحرنا', ['الحوت كبير', 'البحر فيه الحوت'], 2)).toEqual([1, 0])
  })

  it('reads a verb of the question without its prefix or ending, and a French word by its longest shared start, when the texts hold those and not the word', async () => {
    const vocabulary = (...texts: string[]) => new Set(texts.flatMap(textKeys))
    // the imperfect's prefixes (يصوم, نجري, يستعمل) and the endings of person (فرضت, يقراو)
    expect(questionKeys('جدي ما يقدر يصوم', vocabulary('الصوم واجب'))).toContain(matchKey('الصوم'))
    expect(questionKeys('علاش يتحذف المشبه', vocabulary('حذف المشبه'))).toContain(matchKey('حذف'))
    expect(questionKeys('اعلاش فرضت الزكاة', vocabulary('فرض الله الزكاة'))).toContain(matchKey('فرض'))
    // a weak last letter: the verb's ي is the noun's ا (نزكيه and الزكاة, يصلي and الصلاة)
    expect(questionKeys('باش نزكيه', vocabulary('الزكاة واجبة'))).toContain(matchKey('الزكاة'))
    expect(questionKeys('كيف يصلي المريض', vocabulary('صلاة المريض'))).toContain(matchKey('صلاة'))
    // not when the texts hold the word as written, nor when they hold neither reading
    expect(questionKeys('يصوم', vocabulary('يصوم الصوم'))).toEqual(new Set([matchKey('يصوم')]))
    expect(questionKeys('يصوم', vocabulary('الحوت'))).toEqual(new Set([matchKey('يصوم')]))
    // a French key no text holds: the texts' key with the longest start in common, four letters at the least
    expect(questionKeys('la mairie dépense', vocabulary('Le maire et le conseil', 'La dépense'))).toEqual(new Set(['maire', matchKey('dépense')]))
    expect(questionKeys('la mairie', vocabulary('Le marché'))).toEqual(new Set(['mairi']))
    // a page's Arabic word with a letter written onto it counts as the word too (بخطوات: خطوات)
    expect(textKeys('يتم بخطوات')).toEqual(expect.arrayContaining([matchKey('بخطوات'), matchKey('خطوات')]))
    expect(textKeys('بحر')).toEqual([matchKey('بحر')])
    // the rerank reads them so: the page that holds the other form comes first, though the search put the
    // other page nearer the question (its similarity breaks a tie of the keys' shares)
    const provider = createOfflineProvider()
    const nearer = [0.2, 0.8]
    expect(await provider.rerank('هل يصوم القادر', ['الصوم على القادر', 'الزكاة على القادر'], 2, undefined, nearer)).toEqual([0, 1])
    expect(await provider.rerank('le budget de la mairie', ['Le maire vote le budget.', "Le budget de l'État."], 2, undefined, nearer)).toEqual([0, 1])
    expect(await provider.rerank('ما الخطوات في إجراء الاستعارة', ['إجراء الاستعارة يتم بخطوات', 'إجراء الاستعارة وبيان نوعها'], 2, undefined, nearer)).toEqual([
      0,
      1,
    ])
  })
})
