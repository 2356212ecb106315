// The offline provider: no network, deterministic. Embeddings are hashed lexical features; rerank is
// lexical overlap; translation is the identity; the "answer" is extractive: the best sentences of the
// snippets, each with its citation number, and the result says it is extractive.
import type { AiProvider, ChatRequest, ChatResult } from './provider.ts'
import { offlineVector } from './offline-embedder.ts'

const words = (text: string) =>
  new Set(
    text
      .normalize('NFKD')
      .replace(/[\u0300-\u036f\u064B-\u065F\u0670\u0640]/g, '')
      .replace(/[\u0622\u0623\u0625\u0671]/g, '\u0627')
      .toLowerCase()
      .split(/[^\p{L}\p{N}]+/u)
      .filter((w) => w.length > 2),
  )

/** Share of the query's words found in the text. */
export function overlap(query: string, text: string): number {
  const q = words(query)
  if (q.size === 0) return 0
  const t = words(text)
  let hit = 0
  for (const w of q) if (t.has(w)) hit++
  return hit / q.size
}

export function createOfflineProvider(dimension = 1536): AiProvider {
  return {
    name: 'offline',
    dimension,
    embed: async (texts) => texts.map((t) => offlineVector(t, dimension)),
    async rerank(query, documents, topN) {
      return documents
        .map((d, i) => ({ i, score: overlap(query, d) }))
        .sort((a, b) => b.score - a.score || a.i - b.i)
        .slice(0, topN)
        .map((x) => x.i)
    },
    translate: async (text) => text,
    async chat(request: ChatRequest, onDelta): Promise<ChatResult> {
      const question = request.messages.filter((m) => m.role === 'user').at(-1)?.content ?? ''
      const sentences = request.snippets.flatMap((s) =>
        s.text
          .split(/(?<=[.!?؟])\s+/u)
          .filter((x) => x.trim().length > 20)
          .map((text) => ({ n: s.n, text: text.trim(), score: overlap(question, text) })),
      )
      const best = sentences.sort((a, b) => b.score - a.score).slice(0, 3)
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
