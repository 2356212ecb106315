// The offline embedder: deterministic, no network. Hashed lexical features (words folded as the search
// index folds them, text/fold.ts, and character trigrams of each word) into 1536 dimensions, log-weighted and
// L2-normalized, so texts that share words are near in cosine distance. It makes the embedded mode
// useful and the tests hermetic; it is not a semantic model.
import type { Embedder } from './provider.ts'
import { foldedWords } from '../text/fold.ts'

/** FNV-1a, 32 bits, over text[start, end), continued from the state h (0x811c9dc5 to begin). */
function fnv(h: number, text: string, start = 0, end = text.length): number {
  for (let i = start; i < end; i++) {
    h ^= text.charCodeAt(i)
    h = Math.imul(h, 0x01000193)
  }
  return h
}
// the hash states after each kind of feature's prefix: a word is hashed as "w:" + word, a trigram as
// "c:" + trigram, without building those strings
const WORD = fnv(0x811c9dc5, 'w:')
const GRAM = fnv(0x811c9dc5, 'c:')

/**
 * The embedding as a sparse vector: each hashed feature's signed, log-weighted count by dimension, and the
 * vector's norm. offlineVector is its dense, normalized form; the offline rerank compares two texts by it
 * without building 1536 dimensions.
 */
export function offlineFeatures(text: string, dimension: number): { weights: Map<number, number>; norm: number } {
  // counts by feature hash (two features of one text that share all 32 bits would count as one)
  const counts = new Map<number, number>()
  for (const word of foldedWords(text)) {
    const w = fnv(WORD, word) >>> 0
    counts.set(w, (counts.get(w) ?? 0) + 1)
    const padded = `^${word}$`
    for (let i = 0; i + 3 <= padded.length; i++) {
      const g = fnv(GRAM, padded, i, i + 3) >>> 0
      counts.set(g, (counts.get(g) ?? 0) + 0.5)
    }
  }
  const weights = new Map<number, number>()
  for (const [h, count] of counts) {
    const d = h % dimension
    weights.set(d, (weights.get(d) ?? 0) + (h & 0x80000000 ? -1 : 1) * Math.log1p(count))
  }
  let sum = 0
  for (const w of weights.values()) sum += w * w
  return { weights, norm: Math.sqrt(sum) }
}

/** The cosine of two sparse embeddings (0 when either is empty). */
export function featureCosine(a: { weights: Map<number, number>; norm: number }, b: { weights: Map<number, number>; norm: number }): number {
  if (a.norm === 0 || b.norm === 0) return 0
  const [small, large] = a.weights.size <= b.weights.size ? [a.weights, b.weights] : [b.weights, a.weights]
  let dot = 0
  for (const [d, w] of small) dot += w * (large.get(d) ?? 0)
  return dot / (a.norm * b.norm)
}

export function offlineVector(text: string, dimension: number): number[] {
  const { weights, norm } = offlineFeatures(text, dimension)
  const vector = new Array<number>(dimension).fill(0)
  if (norm === 0) return vector
  for (const [d, w] of weights) vector[d] = w / norm
  return vector
}

export function createOfflineEmbedder(dimension = 1536): Embedder {
  return {
    name: 'offline',
    dimension,
    embed: async (texts) => texts.map((t) => offlineVector(t, dimension)),
  }
}
