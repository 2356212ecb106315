// The offline provider: no network, deterministic. Embeddings are hashed lexical features; rerank is the
// share of the question's lightly stemmed content words that each candidate's best passage (three
// sentences in a row) holds plus the whole candidate's share, plus half the share its lesson's topic
// holds (its document's opening sentence, when given; equal scores ordered by the embeddings'
// cosine, then the search's order; a candidate in the other script holding none of them left out when
// another holds some); translation is the identity (it cannot translate); the "answer" is extractive:
// the sentences of the snippets that hold most of the question's keys, each with its citation number,
// and the result says so.
import type { AiProvider, ChatRequest, ChatResult } from './provider.ts'
import { LRUCache } from 'lru-cache'
import { featureCosine, offlineFeatures, offlineVector } from './offline-embedder.ts'
import { foldText, foldedWords } from '../lib/fold.ts'

// Light stemming of Arabic as Larkey's light10 does it: a leading wa-, the article with the particle
// it carries, then each suffix in turn; plus the alef of the accusative (tanwin) ending, so that
// مركزا meets المركز and فرنسا meets الفرنسي.
const ARABIC_ARTICLES = ['وال', 'بال', 'كال', 'فال', 'لل', 'ال']
const ARABIC_SUFFIXES = ['ها', 'ان', 'ات', 'ون', 'ين', 'يه', 'ه', 'ي', 'ا']
const FRENCH_STEM = 5
const FORMULA_LETTER = /^[befghikopqrtuvwxz\u03B1-\u03C9]$/
// French words of two letters (folded): function words and the few others a question holds; any other
// pair of Latin letters is a symbol or a unit (pH, Ka, Ec, OH, kg, km, kJ, mL, dt) and a key
const FRENCH_TWO_LETTER = new Set('ai as au ca ce ci de du eh en es et eu ex il je la le lu ma me mi ne ni nu on ou qu sa se si su ta te tu un va vu'.split(' '))
const ALLAH = new Set(['الله', 'لله', 'بالله', 'فالله', 'تالله'])

/**
 * A word's matching key: folded like the search index (accents, Arabic diacritics and tatweel off,
 * alef forms, taa marbuta and alef maqsura folded), then stemmed lightly: an Arabic word loses a leading
 * wa- (three letters left), one article (two left), every wa- then at its start (three left) and each
 * suffix in turn (light10's order, three left); a Latin word loses a plural s or x and is cut to its
 * first five letters. Null for words too short to mean much; a Latin or Greek letter alone that can name
 * a quantity (x, t, u, v, f, Δ, λ) is its own key, and so are two Latin letters that are no French word
 * (pH, Ka, Ec, kJ: symbols and units).
 */
export function matchKey(word: string): string | null {
  return stem(foldText(word))
}

/** matchKey of a word already folded (lib/fold.ts). */
function stem(folded: string): string | null {
  let w = folded
  if (/\p{Script=Arabic}/u.test(w)) {
    if (w.startsWith('و') && w.length >= 4) w = w.slice(1)
    // the name of God is one word, not the article before له ("to him"), which is a function word
    if (ALLAH.has(w)) return 'الله'
    for (const p of ARABIC_ARTICLES) if (w.startsWith(p) && w.length - p.length >= 2) { w = w.slice(p.length); break }
    // wa- again after the article, and a second one: light10 takes it off the bare word only, so الواجب kept
    // it (واجب) where واجب lost it (اجب), and وولاتة ("and Oualata") never met ولاتة
    while (w.startsWith('و') && w.length >= 4) w = w.slice(1)
    for (const s of ARABIC_SUFFIXES) if (w.endsWith(s) && w.length - s.length >= 3) w = w.slice(0, -s.length)
    return w.length >= 2 ? w : null
  }
  // a letter alone names a quantity in a formula ("x(t)", "u fois v", "(u v)'", "Δ", "λ"): a key, except
  // the letters that are French words or elisions (a, à, y; l', d', s', n', c', j', m')
  if (FORMULA_LETTER.test(w)) return w
  if (w.length === 2 && /^[a-z]{2}$/.test(w)) return FRENCH_TWO_LETTER.has(w) ? null : w
  if (w.length <= 2 && !/\d/.test(w)) return null
  if (w.length > 3) w = w.replace(/[sx]$/, '')
  return w.slice(0, FRENCH_STEM)
}

// function words of French, Arabic and Hassaniya (as keys): they say nothing of which page answers; the
// second Arabic line, the fillers of Hassaniya questions and exercise words, as the search form leaves
// them out (migration 20261123000100_search_cost.sql): گول ("tell me") folds to قول ("saying")
const STOP = new Set(
  `les des une est son ses sur par pour dans avec que qui quoi quel quelle quels quelles quand comment pourquoi
   combien est-ce cette ces cet aux elle elles ils nous vous leur leurs mais donc car plus moins tres tout tous
   fait faire faut peut etre avoir sont ont pas entre apres avant comme aussi alors ainsi
   في من الى على عن ما ماذا متى كيف لماذا هل هو هي هم ان او ثم التي الذي الذين هذا هذه ذلك تلك كان كانت يكون
   مع بين عند كل بعد قبل لا لم لن قد اي شنهو شنهي كيفاش كيفتاش اعلاش شحال منهو فين باش اللي ماهو
   نبغي نعرف گول ياسر گاع واعر فاهم ماني امنين منين فاين انتوم اهون امال اشو اريد اشرح وضح اذكر`
    .split(/\s+/)
    .map(matchKey)
    .filter((k): k is string => k !== null),
)
// a preposition with a pronoun attached (منها, عليه, عندك, فيهم, لنا, بها): a function word as well
const PREPOSITION_PRONOUN = /^(?:من|عن|في|علي|الي|عند|مع|لدي|ل|ب|ك)(?:ه|ها|هم|هما|هن|ك|كم|كما|كن|ي|نا)$/u
const ARABIC_LETTER = /\p{Script=Arabic}/u
/** The matching keys of a text's content words (matchKey, function words left out), in order. */
export const contentKeys = (text: string) => keysOf(text, false)

// what may be written onto an Arabic word that light10 leaves on it: a conjunction or preposition of one
// letter at its start (ومثال, بمثال, فنهار, لكل), and at its end the Hassaniya -و (فاهمو, يلزمو, يقراو)
// or a possessive or object pronoun (بحرنا, كتبهم, درسكم)
const ATTACHED_PREFIX = /^[وبفلك]/u
const ATTACHED_SUFFIX = /^(.{3,}?)(?:و|نا|هم|كم)$/u
// what a verb carries that light10 leaves on it: the prefixes of the imperfect (ي ت ن ا, and with the
// t of forms V, VI, VIII and X: يت ات نت ست يست) and the endings of person and object (ت وا و ني يه وه):
// يصوم meets الصوم, نجري meets إجراء, فرضت meets فرض
const VERB_PREFIXES = ['', 'ي', 'ت', 'ن', 'ا', 'يت', 'ات', 'اي', 'نت', 'ست', 'يست']
const VERB_SUFFIXES = ['', 'ت', 'وا', 'و', 'ني', 'يه', 'وه']
/** The shortest start of a Latin key that another form of its word shares (mairie and maire, évolue and évolution are cut at five). */
const LATIN_PREFIX = 4

/**
 * The keys of a text's content words (contentKeys), and for an Arabic word of five letters or more that
 * begins with a letter written onto it (ATTACHED_PREFIX: بخطوات, وللمشبه), the key of the word without it
 * too: a page's words are matched with a question's that way round as well (questionKeys reads the
 * question's words so), as light10 cannot tell that letter from the word's own.
 */
export const textKeys = (text: string) => keysOf(text, true)

/** contentKeys, and with `bare` textKeys's keys of the words without a letter written onto their start. */
function keysOf(text: string, bare: boolean): string[] {
  const keys: string[] = []
  const add = (word: string) => {
    const k = stem(word)
    if (k !== null && !STOP.has(k)) keys.push(k)
  }
  for (const w of foldedWords(text)) {
    if (PREPOSITION_PRONOUN.test(w)) continue
    add(w)
    if (bare && w.length >= 5 && ATTACHED_PREFIX.test(w) && ARABIC_LETTER.test(w)) add(w.slice(1))
  }
  return keys
}

/**
 * The question's keys (contentKeys), read against the words of the texts it is matched with: an Arabic
 * word whose key none of them holds is taken as the word left without one letter attached at its start
 * (ATTACHED_PREFIX), a pronoun or the Hassaniya -و at its end (ATTACHED_SUFFIX), or both, when that word's
 * key is one they hold. Light10 cannot take these off every word, as they are also a word's own letters
 * (بحر, فرض, لحم); the texts say which reading is meant. A key no text holds changes no text's rank.
 */
export function questionKeys(query: string, vocabulary: ReadonlySet<string>): Set<string> {
  const keys = new Set<string>()
  for (const w of foldedWords(query)) {
    if (PREPOSITION_PRONOUN.test(w)) continue
    const k = stem(w)
    if (k === null || STOP.has(k)) continue
    if (vocabulary.has(k)) keys.add(k)
    else if (ARABIC_LETTER.test(w)) keys.add(attachedReading(w, vocabulary) ?? verbReading(w, vocabulary) ?? k)
    else keys.add(latinReading(k, vocabulary) ?? k)
  }
  return keys
}

/** The key of an Arabic word read without a verb's prefix or ending (VERB_PREFIXES, VERB_SUFFIXES), when the texts hold it. */
function verbReading(word: string, vocabulary: ReadonlySet<string>): string | undefined {
  for (const p of VERB_PREFIXES) {
    if (!word.startsWith(p)) continue
    for (const x of VERB_SUFFIXES) {
      if (!word.endsWith(x) || word.length - p.length - x.length < 3) continue
      const k = stem(word.slice(p.length, word.length - x.length))
      if (k !== null && k.length >= 3 && !STOP.has(k) && vocabulary.has(k)) return k
      // a verb whose last letter is weak ends in ي where its noun ends in ا (يزكي, الزكاة; يصلي, الصلاة)
      const weak = k !== null && k.length >= 3 && k.endsWith('ي') ? `${k.slice(0, -1)}ا` : null
      if (weak !== null && !STOP.has(weak) && vocabulary.has(weak)) return weak
    }
  }
  return undefined
}

/**
 * A Latin key that no text holds, read as the texts' Latin key that shares the longest start with it,
 * LATIN_PREFIX letters at the least (mairie and maire: "mairi" and "maire"; évoluer and évolution meet at
 * five already), the first in alphabetical order on a tie. Keys of fewer than five letters are whole
 * words (prix, pH) and are not read so.
 */
function latinReading(key: string, vocabulary: ReadonlySet<string>): string | undefined {
  if (key.length < FRENCH_STEM) return undefined
  let best: string | undefined
  let bestLength = LATIN_PREFIX
  for (const v of vocabulary) {
    if (ARABIC_LETTER.test(v)) continue
    let n = 0
    while (n < key.length && n < v.length && key[n] === v[n]) n++
    if (n > bestLength || (n === bestLength && (best === undefined || v < best))) [best, bestLength] = [v, n]
  }
  return best
}

function attachedReading(word: string, vocabulary: ReadonlySet<string>): string | undefined {
  const bare = ATTACHED_PREFIX.test(word) && word.length >= 4 ? word.slice(1) : undefined
  const readings = [bare, ATTACHED_SUFFIX.exec(word)?.[1], bare && ATTACHED_SUFFIX.exec(bare)?.[1]]
  for (const r of readings) {
    const k = r && stem(r)
    if (k && !STOP.has(k) && vocabulary.has(k)) return k
  }
  return undefined
}

/**
 * The share of the query's distinct word keys (matchKey) that each document holds. Measured on the
 * retrieval evaluation against BM25 over the candidates (k1 1.2, b 0.75, 0.3 and 0; idf-weighted shares):
 * the plain share ranks the right page first more often, as idf over twenty candidates rewards a rare
 * word that one wrong page happens to hold.
 */
export function keyCoverage(query: string, documents: readonly string[]): number[] {
  return coverageOf(new Set(contentKeys(query)), documents.map((d) => new Set(contentKeys(d))))
}

function coverageOf(q: ReadonlySet<string>, documents: readonly ReadonlySet<string>[]): number[] {
  return documents.map((t) => share(q, t))
}

function share(q: ReadonlySet<string>, t: ReadonlySet<string>): number {
  if (q.size === 0) return 0
  let hit = 0
  for (const k of q) if (t.has(k)) hit++
  return hit / q.size
}

/** Sentences that a passage counts: a window of this many, on from each sentence. */
export const PASSAGE_SENTENCES = 3
// a sentence ends at . ! ? ؟ ; ؛ or : followed by a space (decimal commas and "x = 3.5" stay whole)
export const SENTENCE_END = /(?<=[.!?;:؟؛])\s+/u

// the sentences of the chunks that come back turn after turn, and their keys: the rerank's passages and
// the sources' excerpts (chat/excerpt.ts) are both made of them
const sentenceCache = new LRUCache<string, { sentences: string[]; keys: Set<string>[] }>({ max: 4096 })

/** A text's sentences (SENTENCE_END) and the keys of each (textKeys), cached by text. */
export function sentencesOf(text: string): { sentences: string[]; keys: Set<string>[] } {
  let forms = sentenceCache.get(text)
  if (!forms) {
    const sentences = text.split(SENTENCE_END)
    sentenceCache.set(text, (forms = { sentences, keys: sentences.map((x) => new Set(textKeys(x))) }))
  }
  return forms
}

/**
 * The keys of each passage of a text: PASSAGE_SENTENCES sentences in a row, on from each sentence
 * (a text of fewer sentences is one passage).
 */
export function passageKeys(text: string): Set<string>[] {
  const sentences = sentencesOf(text).keys
  const passages: Set<string>[] = []
  for (let i = 0; i === 0 || i + PASSAGE_SENTENCES <= sentences.length; i++) {
    const passage = new Set<string>()
    for (const s of sentences.slice(i, i + PASSAGE_SENTENCES)) for (const k of s) passage.add(k)
    passages.push(passage)
  }
  return passages
}

/**
 * The best share of the query's keys that one passage of each document holds (passageKeys). A page
 * that answers a question holds its words together; a long page also holds them scattered, one here
 * and one there in paragraphs about other things, and the whole text's share cannot tell the two apart.
 */
export function passageCoverage(query: string, documents: readonly string[]): number[] {
  const q = new Set(contentKeys(query))
  return documents.map((d) => bestPassage(q, passageKeys(d)))
}

function bestPassage(q: ReadonlySet<string>, passages: readonly ReadonlySet<string>[]): number {
  let best = 0
  for (const p of passages) best = Math.max(best, share(q, p))
  return best
}

/** Whether a text is written mostly in Arabic letters rather than Latin ones. */
const arabicScript = (t: string) => (t.match(/\p{Script=Arabic}/gu)?.length ?? 0) > (t.match(/\p{Script=Latin}/gu)?.length ?? 0)

interface TextForms {
  keys: Set<string>
  /** arabicScript, read when a text holding none of the question's keys is weighed */
  arabic?: boolean
  /** the keys of each passage (passageKeys) */
  passages: Set<string>[]
  /** the sparse embedding, made when a tie first needs it */
  features?: ReturnType<typeof offlineFeatures>
}

/**
 * The weight of the share of the question's keys that a candidate's lesson topic holds, beside its best
 * passage's share and its whole text's (each up to 1). Measured first on two question sets: 0.25 and 0.5
 * alike, 1 took page@1 with the subject down on the first set. Measured again once the search's order
 * counted in the score (SEARCH_RANK_WEIGHT), over the three unsealed sets: page@1 with / without the
 * subject 327 / 312 at 0.5, 328 / 314 at 0.75 and at 1, 325 / 310 at 1.5, 324 / 309 at 2; doc@1 376 / 357
 * at 1, the best of them.
 */
export const TOPIC_WEIGHT = 1

// a lesson's topic is the same sentence for all its pages: its keys are made once
const topicCache = new LRUCache<string, Set<string>>({ max: 1024 })
const topicKeys = (topic: string): Set<string> => {
  let keys = topicCache.get(topic)
  if (!keys) topicCache.set(topic, (keys = new Set(textKeys(topic))))
  return keys
}

/**
 * The weight of the search's own order in the offline rerank's score: the page the search put first
 * (its fused score: full text and embeddings) adds this much, the second half of it, the n-th 1/n of it.
 * The shares of the question's keys are coarse (four to eight keys a question) and blind to a word's
 * rarity and to the forms the keys miss, which the search sees; until 2026-11-25 its order only broke
 * exact ties. Measured on the three unsealed question sets, page@1 with the subject 321 → 327 of 390 at
 * 0.3 (0.2 and 0.4: 326; 0.5: 322; 1 and more: the search's order, 318 and less): the second and third
 * sets gained 8 questions, the first (tuned on the key shares) lost 2.
 */
export const SEARCH_RANK_WEIGHT = 0.3

/** Each text's place in the search's order (0 for the nearest), from the search's figures (a greater figure is nearer; equal ones keep the candidates' order). */
function searchPlaces(similarity: readonly number[]): number[] {
  const places = new Array<number>(similarity.length)
  similarity
    .map((s, i) => [s, i] as const)
    .sort((a, b) => b[0] - a[0] || a[1] - b[1])
    .forEach(([, i], place) => (places[i] = place))
  return places
}

export function createOfflineProvider(dimension = 1536): AiProvider {
  // a text's keys and sparse embedding, kept for the chunks that turn after turn come back as candidates
  const cache = new LRUCache<string, TextForms>({ max: 4096 })
  const forms = (text: string): TextForms => {
    let f = cache.get(text)
    if (!f) cache.set(text, (f = { keys: new Set(textKeys(text)), passages: passageKeys(text) }))
    return f
  }
  const features = (f: TextForms, text: string) => (f.features ??= offlineFeatures(text, dimension))
  return {
    name: 'offline',
    dimension,
    embed: async (texts) => texts.map((t) => offlineVector(t, dimension)),
    async rerank(query, documents, topN, _signal, searchSimilarity, topics) {
      // the question is new each turn: its forms are made, not cached, so the cache keeps the chunks
      const texts = documents.map(forms)
      const vocabulary = new Set<string>()
      for (const t of texts) for (const k of t.keys) vocabulary.add(k)
      const q = questionKeys(query, vocabulary)
      // the best passage's share plus the whole text's: measured on the evaluation's pages, and on the
      // same pages lengthened with paragraphs of other lessons (as a long page holds them). The passage
      // alone kept 1 to 3.5 points of page@1 more than the whole text's share alone; the sum keeps 1 more
      // on each, since a page that holds every key of the question in two places answers it too
      const passage = texts.map((t) => bestPassage(q, t.passages))
      const whole = coverageOf(q, texts.map((t) => t.keys))
      // and TOPIC_WEIGHT of the share its lesson's topic holds (the document's opening sentence): a page of
      // the lesson about what the question names (التشبيه) goes before a page of another lesson that
      // mentions it as often (the metaphor's, which is defined as a simile)
      const topic = texts.map((_, i) => {
        const t = topics?.[i]
        return t ? TOPIC_WEIGHT * share(q, topicKeys(t)) : 0
      })
      // and SEARCH_RANK_WEIGHT / (1 + its place in the search's order), when the search's figures are given
      const places = searchSimilarity?.length === documents.length ? searchPlaces(searchSimilarity) : undefined
      const held = texts.map((_, i) => passage[i]! + whole[i]! + topic[i]!)
      const score = held.map((h, i) => h + (places ? SEARCH_RANK_WEIGHT / (1 + places[i]!) : 0))
      const cmp = (a: number, b: number) => score[b]! - score[a]!
      // equal shares (frequent: a question holds four to eight keys) go to the text the search put nearer
      // the question: the hybrid search's fused score, whose full-text stemmer (mairie, maire) and the
      // embedding's character trigrams meet forms of a word that the five-letter and light-stem keys
      // miss; a dense search's cosine (the same embedding). Without the search's figures, the ties that
      // reach into the first topN are embedded here.
      const byScore = documents.map((_, i) => i).sort((a, b) => cmp(a, b) || a - b)
      const similarity = new Map<number, number>()
      let queryFeatures: ReturnType<typeof offlineFeatures> | undefined
      for (let start = 0; start < Math.min(topN, byScore.length); ) {
        let end = start + 1
        while (end < byScore.length && cmp(byScore[start]!, byScore[end]!) === 0) end++
        if (end - start > 1)
          for (const i of byScore.slice(start, end))
            similarity.set(i, searchSimilarity?.[i] ?? featureCosine((queryFeatures ??= offlineFeatures(query, dimension)), features(texts[i]!, documents[i]!)))
        start = end
      }
      // a text in the other script that holds none of the question's keys cannot answer it here (no
      // translation, no shared trigrams): it is left out when another text holds some, so a French
      // question's later sources are not Arabic pages it shares nothing with. When none holds any, all
      // stay: the other language's lesson is then the best there is (cross-lingual questions).
      const anyHeld = byScore.some((i) => held[i]! > 0)
      const questionArabic = anyHeld && arabicScript(query)
      return byScore
        .sort((a, b) => cmp(a, b) || (similarity.get(b) ?? 0) - (similarity.get(a) ?? 0) || a - b)
        .filter((i) => !anyHeld || held[i]! > 0 || (texts[i]!.arabic ??= arabicScript(documents[i]!)) === questionArabic)
        .slice(0, topN)
    },
    translates: false,
    translate: async (text) => text,
    async chat(request: ChatRequest, onDelta): Promise<ChatResult> {
      const question = request.messages.filter((m) => m.role === 'user').at(-1)?.content ?? ''
      const sentences = request.snippets.flatMap((s) =>
        s.text
          .split(/(?<=[.!?؟])\s+/u)
          .filter((x) => x.trim().length > 20)
          .map((text) => ({ n: s.n, text: text.trim(), keys: new Set(textKeys(text)) })),
      )
      // the share of the question's keys each sentence holds, read as the rerank reads them (function words
      // left out, a letter written onto an Arabic word read against the snippets' words); on a tie the
      // sentence of the better source, then the earlier one (the sort is stable)
      const vocabulary = new Set(sentences.flatMap((x) => [...x.keys]))
      const q = questionKeys(question, vocabulary)
      const best = sentences
        .map((x) => ({ ...x, score: share(q, x.keys) }))
        .sort((a, b) => b.score - a.score)
        .slice(0, 3)
      const budget = request.maxTokens * 4 // about four characters per token
      let written = 0
      for (const s of best) {
        const piece = `${written ? ' ' : ''}${s.text} [${s.n}]`
        if (written + piece.length > budget) break
        onDelta(piece)
        written += piece.length
      }
      if (written === 0) onDelta(request.language === 'fr' ? 'Aucun passage du programme ne répond à cette question.' : 'لا يوجد في المقرر نص يجيب عن هذا السؤال.')
      return { model: 'offline-extractive', extractive: true }
    },
  }
}
