// Both providers behind one interface: the openai one through the real SDK against an OpenAI-compatible
// server on loopback, and the offline one.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type OpenAiServer, startOpenAiServer } from './helpers/openai-server.ts'
import { createOpenAiProvider } from '../functions-shared/ai/openai.ts'
import { createOfflineProvider, SEARCH_RANK_WEIGHT, TOPIC_WEIGHT } from '../functions-shared/ai/offline.ts'
import { keyCoverage, PASSAGE_SENTENCES, passageCoverage, passageKeys } from '../functions-shared/text/keys.ts'
import { type AiProvider, ProviderError } from '../functions-shared/ai/provider.ts'
import { AR_LESSON, FR_LESSON, PHYSICS_LESSON } from './helpers/portal.ts'

let server: OpenAiServer
let openai: AiProvider
beforeAll(async () => {
  server = await startOpenAiServer()
  openai = createOpenAiProvider({
    apiKey: 'test-key',
    baseUrl: server.url,
    chatModel: 'gpt-test',
    embeddingModel: 'embed-test',
    rerankModel: 'rerank-test',
    translateModel: 'translate-test',
    dimension: 1536,
    timeoutMs: 2000,
  })
})
afterAll(async () => server?.close())

const snippets = [
  { n: 1, text: FR_LESSON, title: 'Maths 4AS', page_number: 3 },
  { n: 2, text: PHYSICS_LESSON, title: 'Physique 5AS', page_number: 7 },
]

describe('the openai provider (real SDK, loopback server)', () => {
  it('embeds with the configured model and 1536 dimensions, in input order', async () => {
    const vectors = await openai.embed(['première', 'seconde'])
    expect(vectors).toHaveLength(2)
    expect(vectors[0]).toHaveLength(1536)
    expect(Math.abs(Math.hypot(...vectors[0]!) - 1)).toBeLessThan(1e-5)
    expect(server.calls.at(-1)).toMatchObject({ path: '/v1/embeddings', body: { model: 'embed-test', dimensions: 1536, input: ['première', 'seconde'] } })
  })

  it("streams the chat answer through the SDK's SSE parsing, with the snippets in a system message", async () => {
    server.chat = () => ({ content: "On isole l'inconnue puis on vérifie la solution [1]." })
    const deltas: string[] = []
    const result = await openai.chat({
      messages: [{ role: 'system', content: 'Tu es un professeur.' }, { role: 'user', content: 'Comment résoudre 3x + 2 = 11 ?' }],
      snippets,
      language: 'fr',
      maxTokens: 300,
    }, (d) => deltas.push(d))
    expect(deltas.length).toBeGreaterThan(3)
    expect(deltas.join('')).toBe("On isole l'inconnue puis on vérifie la solution [1].")
    expect(result).toEqual({ model: 'gpt-test-served', extractive: false })
    const call = server.calls.at(-1)!.body
    expect(call).toMatchObject({ model: 'gpt-test', stream: true, max_tokens: 300 })
    expect(call.messages.at(-2).content).toContain('[1] Maths 4AS, p. 3:')
    expect(call.messages.at(-1)).toEqual({ role: 'user', content: 'Comment résoudre 3x + 2 = 11 ?' })
  })

  it("reranks from the model's JSON, dropping unknown and repeated indices", async () => {
    server.chat = () => ({ content: 'Here: {"ranking": [2, 0, 2, 9]}' })
    expect(await openai.rerank('ondes', ['a', 'b', 'c'], 3)).toEqual([2, 0])
    server.chat = () => ({ content: 'I cannot rank these.' })
    const err = await openai.rerank('ondes', ['a'], 1).catch((e: unknown) => e)
    expect(err).toBeInstanceOf(ProviderError)
    expect((err as ProviderError).transient).toBe(false)
  })

  it('translates', async () => {
    server.chat = () => ({ content: " Quels sont les piliers de l'islam ? " })
    expect(await openai.translate('ما هي أركان الإسلام؟', 'ar', 'fr')).toBe("Quels sont les piliers de l'islam ?")
    expect(server.calls.at(-1)!.body.model).toBe('translate-test')
  })

  it('reports 503 (with Retry-After) and timeouts as transient, 400 as permanent', async () => {
    server.chat = () => ({ status: 503, headers: { 'retry-after': '3' } })
    const busy = (await openai.translate('x', 'ar', 'fr').catch((e: unknown) => e)) as ProviderError
    expect(busy).toMatchObject({ transient: true, status: 503, retryAfterMs: 3000 })
    server.chat = () => ({ status: 400 })
    expect((await openai.translate('x', 'ar', 'fr').catch((e: unknown) => e)) as ProviderError).toMatchObject({ transient: false, status: 400 })
    server.chat = () => ({ content: 'late', delayMs: 2500 })
    const late = (await openai.translate('x', 'ar', 'fr').catch((e: unknown) => e)) as ProviderError
    expect(late).toBeInstanceOf(ProviderError)
    expect(late.transient).toBe(true)
  })

  it('bounds a call whose server sends its headers and then stalls: the timeout covers the body, and each piece of a streamed answer', async () => {
    const quick = createOpenAiProvider({
      apiKey: 'test-key',
      baseUrl: server.url,
      chatModel: 'gpt-test',
      embeddingModel: 'embed-test',
      rerankModel: 'rerank-test',
      translateModel: 'translate-test',
      dimension: 1536,
      timeoutMs: 300,
    })
    const stalled = async (call: Promise<unknown>) => {
      // a wide liveness bound: without the deadline these calls never end
      const never = new Promise((resolve) => setTimeout(() => resolve('still waiting'), 20_000).unref())
      return Promise.race([call.then(() => 'answered', (e: unknown) => e), never])
    }
    server.chat = () => ({ content: 'Une réponse qui commence puis plus rien', stallAfter: 2 })
    const deltas: string[] = []
    const chat = await stalled(quick.chat({ messages: [{ role: 'user', content: 'x' }], snippets: [], language: 'fr', maxTokens: 50 }, (d) => deltas.push(d)))
    expect(chat).toBeInstanceOf(ProviderError)
    expect(chat).toMatchObject({ transient: true })
    expect(deltas.length).toBe(2)
    for (const call of [() => quick.translate('x', 'ar', 'fr'), () => quick.rerank('q', ['a', 'b'], 2)]) {
      server.chat = () => ({ content: 'x', stallAfter: 0 })
      expect(await stalled(call())).toMatchObject({ name: 'ProviderError', transient: true })
    }
    server.embeddings = () => ({ stallAfter: 0 })
    try {
      expect(await stalled(quick.embed(['x']))).toMatchObject({ name: 'ProviderError', transient: true })
    } finally {
      server.embeddings = () => ({})
    }
    // an answer slower than the timeout as a whole, whose pieces each come in time, is not cut
    server.chat = () => ({ content: 'un deux trois quatre cinq six sept', pieceDelayMs: 100 })
    const slow: string[] = []
    await quick.chat({ messages: [{ role: 'user', content: 'x' }], snippets: [], language: 'fr', maxTokens: 50 }, (d) => slow.push(d))
    expect(slow.join('')).toBe('un deux trois quatre cinq six sept')
  })
})

describe('the offline provider', () => {
  const offline = createOfflineProvider()

  it('reranks by lexical overlap with the question', async () => {
    expect(await offline.rerank("la célérité des ondes dans l'eau", [FR_LESSON, PHYSICS_LESSON, AR_LESSON], 2)).toEqual([1, 0])
  })

  it("orders texts that hold an equal share of the question's keys by the embeddings' cosine, whatever order they came in", async () => {
    // both hold "vitesse" and "moyenne", two of the three keys; "recalcule" is not the key of "calculer"
    // (recal, calcu) but shares its character trigrams, which the embedding sees
    const question = 'comment calculer la vitesse moyenne ?'
    const plain = 'La vitesse moyenne est une grandeur physique.'
    const closer = 'On recalcule la vitesse moyenne sur chaque intervalle.'
    const shares = keyCoverage(question, [plain, closer])
    expect(shares[0]).toBe(shares[1])
    expect(await offline.rerank(question, [plain, closer], 2)).toEqual([1, 0])
    expect(await offline.rerank(question, [closer, plain], 2)).toEqual([0, 1])
  })

  it('ranks first the text whose words stand together in one passage, not scattered over a long page', async () => {
    const question = 'comment calculer la vitesse moyenne du cycliste ?'
    // each holds all four keys; the long page holds them in paragraphs about other things
    const scattered = [
      'Le cycliste porte un casque.',
      'Les routes du pays sont longues.',
      'La saison des pluies commence en juillet.',
      'On apprend à calculer une aire.',
      'Le marché ouvre le matin.',
      'Le fleuve traverse la vallée.',
      'La vitesse du son est connue.',
      'Les élèves rangent la classe.',
      'Le vent souffle du nord.',
      'Une moyenne de notes se fait aussi.',
    ].join(' ')
    const together = 'Méthode. Pour calculer la vitesse moyenne du cycliste, on divise la distance par la durée. Exemple : 30 km en 2 h.'
    expect(keyCoverage(question, [scattered, together])).toEqual([1, 1])
    expect(passageCoverage(question, [scattered, together])).toEqual([0.25, 1])
    // the passage decides before the cosine, even a search's cosine that favours the long page
    expect(await offline.rerank(question, [scattered, together], 2, undefined, [0.9, 0.1])).toEqual([1, 0])
    // a passage is PASSAGE_SENTENCES sentences in a row, Arabic marks included; a short text is one passage
    expect(passageKeys('أ ب. ج د؟ هـ و؛ ز ح: ط').length).toBe(Math.max(1, 5 - PASSAGE_SENTENCES + 1))
    expect(passageKeys('Une seule phrase sans point')).toHaveLength(1)
  })

  it("counts the whole text's share beside its best passage's: a page that holds every key outranks one whose passage holds one more", async () => {
    const question = 'vitesse moyenne du cycliste, distance, durée et pente ?'
    // four of the six keys in one sentence, and nothing more
    const narrow = 'La vitesse moyenne du cycliste se mesure sur la distance.'
    // three in its first sentence, the other three in its last: every key of the question on the page
    const broad =
      'La vitesse moyenne du cycliste est connue. Le marché ouvre le matin. Les élèves rangent la classe. Le vent souffle du nord. On compte la distance, la durée et la pente.'
    expect(passageCoverage(question, [narrow, broad])).toEqual([4 / 6, 3 / 6])
    expect(keyCoverage(question, [narrow, broad])).toEqual([4 / 6, 1])
    expect(await offline.rerank(question, [narrow, broad], 2, undefined, [0.9, 0.1])).toEqual([1, 0])
  })

  it("counts the search's order in the score, not only on ties: the nearer page outweighs a topic that holds one key more of seven", async () => {
    const question = 'vitesse moyenne du cycliste en montée, distance, durée, pente ?'
    // both pages hold the question's seven keys in one passage; only the lessons' topics differ
    const slope = 'La vitesse moyenne du cycliste baisse en montée. On mesure la distance et la durée. La pente compte.'
    const bike = 'En montée, la vitesse moyenne du cycliste baisse. La distance et la durée se mesurent. La pente compte.'
    const topics = ['Leçon 3 : la montée.', 'Leçon 4 : le vélo.']
    expect(keyCoverage(question, [slope, bike])).toEqual([1, 1])
    expect(passageCoverage(question, [slope, bike])).toEqual([1, 1])
    // one key of seven in its topic: TOPIC_WEIGHT / 7 more for the first page
    expect(await offline.rerank(question, [slope, bike], 2, undefined, undefined, topics)).toEqual([0, 1])
    // the search put the second nearer: SEARCH_RANK_WEIGHT against SEARCH_RANK_WEIGHT / 2 outweighs it
    expect(SEARCH_RANK_WEIGHT / 2).toBeGreaterThan(TOPIC_WEIGHT / 7)
    expect(await offline.rerank(question, [slope, bike], 2, undefined, [0.2, 0.8], topics)).toEqual([1, 0])
    // but not a key more in the page's own words (in its passage and in the whole page: 2 / 7)
    const partial = 'En montée, la vitesse moyenne du cycliste baisse. La distance et la durée se mesurent.'
    expect(await offline.rerank(question, [slope, partial], 2, undefined, [0.2, 0.8])).toEqual([0, 1])
  })

  it("leaves out a text of the other script that holds none of the question's words, unless no text holds any", async () => {
    const question = 'Comment calculer la vitesse moyenne ?'
    const held = 'La vitesse moyenne est la distance divisée par la durée.'
    const sameScript = 'Le fleuve traverse la vallée.'
    const otherScript = 'الصوم ركن من أركان الإسلام.'
    // the Arabic text is left out; the French one without the question's words stays, after the one with them
    expect(await offline.rerank(question, [otherScript, held, sameScript], 3, undefined, [0.9, 0.5, 0.1])).toEqual([1, 2])
    // an Arabic text that holds one of them (a formula, a unit) stays
    expect(await offline.rerank('que vaut v quand t = 2 ?', ['السرعة v = 3 t', 'Le fleuve.'], 2)).toEqual([0, 1])
    // nothing holds any word of the question: everything stays, the other language's lesson included
    expect((await offline.rerank('Qui était Cheikh Sidiya ?', [otherScript, sameScript], 2)).sort()).toEqual([0, 1])
  })

  it('translates as the identity', async () => {
    expect(await offline.translate('ما هي أركان الإسلام؟', 'ar', 'fr')).toBe('ما هي أركان الإسلام؟')
  })

  it('answers by extracting the best sentences of the snippets, with their citation numbers, and says so', async () => {
    const deltas: string[] = []
    const result = await offline.chat({
      messages: [{ role: 'user', content: "Quelle est la célérité du son dans l'eau ?" }],
      snippets,
      language: 'fr',
      maxTokens: 500,
    }, (d) => deltas.push(d))
    const answer = deltas.join('')
    expect(result).toEqual({ model: 'offline-extractive', extractive: true })
    expect(answer).toMatch(/1500 mètres par seconde dans l'eau\. \[2\]/)
    expect(answer.length).toBeLessThanOrEqual(2000)
  })

  it("answers with the sentence that holds most of the question's content words, not its function words", async () => {
    const deltas: string[] = []
    const twoSnippets = [
      { n: 1, text: 'Comment la vitesse moyenne varie-t-elle quand la route monte ?' },
      { n: 2, text: 'On calcule la vitesse moyenne en divisant la distance parcourue par la durée du trajet.' },
    ]
    await offline.chat({
      messages: [{ role: 'user', content: 'Comment calculer la vitesse moyenne ?' }],
      snippets: twoSnippets,
      language: 'fr',
      maxTokens: 500,
    }, (d) => deltas.push(d))
    expect(deltas.join('')).toMatch(/^On calcule la vitesse moyenne en divisant la distance parcourue par la durée du trajet\. \[2\]/)
  })

  it("says when nothing in the snippets answers, in the question's language", async () => {
    const deltas: string[] = []
    await offline.chat({ messages: [{ role: 'user', content: 'سؤال' }], snippets: [], language: 'ar', maxTokens: 100 }, (d) => deltas.push(d))
    expect(deltas.join('')).toContain('لا يوجد')
  })
})

describe('provider selection', () => {
  it('is offline without a key, openai with one (auto), and refuses openai without a key', async () => {
    const { createAiProvider } = await import('../functions-shared/ai/select.ts')
    const { loadConfig } = await import('../functions-shared/config.ts')
    expect(createAiProvider(loadConfig({})).name).toBe('offline')
    expect(createAiProvider(loadConfig({ OPENAI_API_KEY: 'k' })).name).toBe('openai')
    expect(createAiProvider(loadConfig({ OPENAI_API_KEY: 'k', AI_PROVIDER: 'offline' })).name).toBe('offline')
    expect(() => loadConfig({ AI_PROVIDER: 'openai' })).toThrow(/AI_PROVIDER/)
  })

  it('the openai provider embeds with its configured embedding model', async () => {
    const provider = createOpenAiProvider({
      apiKey: 'k',
      baseUrl: server.url,
      chatModel: 'c',
      embeddingModel: 'e-ingest',
      rerankModel: 'r',
      translateModel: 't',
      dimension: 1536,
      timeoutMs: 2000,
    })
    const before = server.calls.length
    await provider.embed(['x'])
    expect(server.calls.slice(before).map((c) => c.body.model)).toEqual(['e-ingest'])
  })
})
