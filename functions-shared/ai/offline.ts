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
import { bestPassage, coverageOf, passageKeys, questionKeys, share, textKeys } from '../text/keys.ts'

const arabicScript = (t: string) => (t.match(/\p{Script=Arabic}/gu)?.length ?? 0) > (t.match(/\p{Script=Latin}/gu)?.length ?? 0)

interface TextForms {
  keys: Set<string>
  /** arabicScript, read when a text holding none of the question's keys is weighed */
  arabic?: boolean
  /** the keys of each passage (passageKeys) */
  passages: Set<string>[]
  /** the sparse embedding, made when a tie first needs it */
  features?: ReturnType<typeof offlineFeatures>
  /** the sentences an answer may quote, each with its keys, made when it is first a snippet */
  quotable?: { text: string; keys: Set<string> }[]
}

/**
 * The weight of the share of the question's keys that a candidate's lesson topic holds, beside its best
 * passage's share and its whole text's (each up to 1): the best of the values measured on the question
 * sets (docs/teacher.md, the rerank's tuning).
 */
export const TOPIC_WEIGHT = 1

// a lesson's topic is the same sentence for all its pages: its keys are made once
const topicCache = new LRUCache<string, Set<string>>({ max: 1024 })
const topicKeys = (topic: string): Set<string> => {
  let keys = topicCache.get(topic)
  if (!keys) topicCache.set(topic, keys = new Set(textKeys(topic)))
  return keys
}

/**
 * The weight of the search's own order in the offline rerank's score: the page the search put first
 * (its fused score: full text and embeddings) adds this much, the second half of it, the n-th 1/n of it.
 * The shares of the question's keys are coarse (four to eight keys a question) and blind to a word's
 * rarity and to the forms the keys miss, which the search sees (the value measured: docs/teacher.md).
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
    if (!f) cache.set(text, f = { keys: new Set(textKeys(text)), passages: passageKeys(text) })
    return f
  }
  const features = (f: TextForms, text: string) => (f.features ??= offlineFeatures(text, dimension))
  const quotable = (text: string) =>
    forms(text).quotable ??= text
      .split(/(?<=[.!?؟])\s+/u)
      .filter((x) => x.trim().length > 20)
      .map((x) => ({ text: x.trim(), keys: new Set(textKeys(x)) }))
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
      for (let start = 0; start < Math.min(topN, byScore.length);) {
        let end = start + 1
        while (end < byScore.length && cmp(byScore[start]!, byScore[end]!) === 0) end++
        if (end - start > 1) {
          for (const i of byScore.slice(start, end)) {
            similarity.set(i, searchSimilarity?.[i] ?? featureCosine(queryFeatures ??= offlineFeatures(query, dimension), features(texts[i]!, documents[i]!)))
          }
        }
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
      const sentences = request.snippets.flatMap((s) => quotable(s.text).map((x) => ({ n: s.n, ...x })))
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
      if (written === 0) {
        onDelta(request.language === 'fr' ? 'Aucun passage du programme ne répond à cette question.' : 'لا يوجد في المقرر نص يجيب عن هذا السؤال.')
      }
      return { model: 'offline-extractive', extractive: true }
    },
  }
}
