// The offline embedder: deterministic, no network. Hashed lexical features (accent- and Arabic-
// normalized words, and character trigrams of each word) into 1536 dimensions, log-weighted and
// L2-normalized, so texts that share words are near in cosine distance. It makes the embedded mode
// useful and the tests hermetic; it is not a semantic model.
import type { Embedder } from './provider.ts'

/** A word folded for matching: lower case, without accents, diacritics and tatweel; alef forms, taa marbuta and alef maqsura folded. */
export function normalizeWord(word: string): string {
  return word
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '') // Latin accents
    .replace(/[\u064B-\u065F\u0670\u0640]/g, '') // Arabic diacritics (and the hamza/madda NFKD splits off alef), tatweel
    .replace(/[\u0622\u0623\u0625\u0671]/g, '\u0627') // alef variants
    .replace(/\u0629/g, '\u0647') // taa marbuta
    .replace(/\u0649/g, '\u064A') // alef maqsura
    .toLowerCase()
}

/** FNV-1a, 32 bits. */
function hash(text: string): number {
  let h = 0x811c9dc5
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i)
    h = Math.imul(h, 0x01000193)
  }
  return h >>> 0
}

export function offlineVector(text: string, dimension: number): number[] {
  const counts = new Map<string, number>()
  const words = text.split(/[^\p{L}\p{N}]+/u).filter(Boolean).map(normalizeWord)
  for (const word of words) {
    counts.set(`w:${word}`, (counts.get(`w:${word}`) ?? 0) + 1)
    const padded = `^${word}$`
    for (let i = 0; i + 3 <= padded.length; i++) {
      const gram = `c:${padded.slice(i, i + 3)}`
      counts.set(gram, (counts.get(gram) ?? 0) + 0.5)
    }
  }
  const vector = new Array<number>(dimension).fill(0)
  for (const [feature, count] of counts) {
    const h = hash(feature)
    vector[h % dimension]! += (h & 0x80000000 ? -1 : 1) * Math.log1p(count)
  }
  const norm = Math.hypot(...vector)
  return norm === 0 ? vector : vector.map((v) => v / norm)
}

export function createOfflineEmbedder(dimension = 1536): Embedder {
  return {
    name: 'offline',
    dimension,
    embed: async (texts) => texts.map((t) => offlineVector(t, dimension)),
  }
}
