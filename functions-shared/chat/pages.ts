// The rerank reads pages, not chunks. A page longer than one chunk (384 tokens of Arabic, 512 of French:
// a textbook page often is) is cut into windows that overlap; the question's words may sit in both, and
// each window alone holds only part of what the page says, so a page that answers the question as a
// whole lost to a shorter page of the same lesson whose one chunk held more of the question's words.
// The candidates of one page (same document, same page number) are read as one text, in their order on
// the page with the windows' overlap written once; the provider ranks those texts, and the pages give
// back their chunks (rerankByPage). A page with one chunk among the candidates is read as it is:
// nothing changes for short pages.
import type { AiProvider } from '../ai/provider.ts'

export interface PagedChunk {
  file_id: string
  page_number: number
  /** the chunk's place in its document (document_chunks.chunk_index): the order of a page's windows */
  chunk_index: number
  text: string
  distance: number
  /** the hybrid search's fused score (absent for a dense-only search) */
  score?: number
  /** what the page's lesson is about, as its document's opening sentence says (ChunkText.topic) */
  topic?: string | null
}

export interface CandidatePage {
  /** the chunks of the page, as indices into the candidates, in the search's order */
  members: number[]
  /** the page's text as the candidates hold it: their windows in reading order, the overlaps once */
  text: string
  /**
   * how near the search put it: the best fused score of its chunks (hybrid search: the full-text rank,
   * whose stemmer meets forms the rerank's keys miss, with the dense one), else their best cosine similarity
   */
  similarity: number
  /** its lesson's topic (PagedChunk.topic) */
  topic: string | null
}

// the shortest overlap taken for one (shorter ones match by chance: a word, a space)
const MIN_OVERLAP = 12

/**
 * `next` written after `previous` with the part they share written once: the longest start of `next`
 * that ends `previous` (the windows' overlap, trimmed as the chunks are). Joined by a space when they
 * share none (not neighbours: a window between them is no candidate).
 */
export function joinWindows(previous: string, next: string): string {
  const probe = next.slice(0, MIN_OVERLAP)
  if (probe.length === MIN_OVERLAP) {
    // the longest such start: a page that says a thing twice holds shorter ones that are no overlap
    for (let at = previous.indexOf(probe); at >= 0; at = previous.indexOf(probe, at + 1)) {
      const tail = previous.slice(at)
      if (next.startsWith(tail)) return previous + next.slice(tail.length)
    }
  }
  return `${previous} ${next}`
}

/** The candidates grouped by page, in the order each page first comes. */
export function candidatePages(chunks: readonly PagedChunk[]): CandidatePage[] {
  const byPage = new Map<string, number[]>()
  chunks.forEach((c, i) => {
    const key = `${c.file_id}:${c.page_number}`
    const members = byPage.get(key)
    if (members) members.push(i)
    else byPage.set(key, [i])
  })
  return [...byPage.values()].map((members) => {
    const reading = [...members].sort((a, b) => chunks[a]!.chunk_index - chunks[b]!.chunk_index)
    return {
      members,
      text: reading.map((i) => chunks[i]!.text).reduce(joinWindows),
      similarity: Math.max(...members.map((i) => chunks[i]!.score ?? 1 - chunks[i]!.distance)),
      topic: chunks[members[0]!]!.topic ?? null,
    }
  })
}

/**
 * The provider's rerank of the candidates read page by page (candidatePages), as indices of the
 * candidates: one chunk of each page in the pages' order (the one the search ranked first), then the
 * pages' other chunks in the same order, so the first sources are as many pages as there are and a
 * page's second window votes for no subject twice. A ranking that leaves pages out (a model's) leaves out
 * their chunks. `topN` counts pages.
 */
export async function rerankByPage(ai: AiProvider, query: string, chunks: readonly PagedChunk[], topN: number, signal?: AbortSignal): Promise<number[]> {
  const pages = candidatePages(chunks)
  const order = await ai.rerank(query, pages.map((p) => p.text), topN, signal, pages.map((p) => p.similarity), pages.map((p) => p.topic))
  const ranked = [...new Set(order)].map((i) => pages[i]).filter((p): p is CandidatePage => p !== undefined)
  return [...ranked.map((p) => p.members[0]!), ...ranked.flatMap((p) => p.members.slice(1))]
}
