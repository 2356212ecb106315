// Chunking (spec §4.8): token windows of cl100k_base (512/64 for French, 384/48 for Arabic and
// Hassaniya) for reference-driven ingestion, character windows (1000/150) for manual uploads. Chunks
// never cross pages, so each carries its page number. Chunk ids are deterministic.
import type { Tokenizer } from './tokenizer.ts'

export interface TextChunk {
  page_number: number
  chunk_index: number
  text: string
  token_count?: number
}

const REPLACEMENT = '\uFFFD'

const WORD_CHAR = /[\p{L}\p{M}\p{N}]/u

/**
 * Token windows of `size` with `overlap`. A window boundary that would cut a character in two (a UTF-8
 * sequence spread over tokens, common in Arabic) is moved to the next token that ends a character. A
 * window starts and ends between two words where one lies near: its start moves forward, within the
 * text the window before already holds, and its end back, by at most half the overlap; a word cut at an
 * end is whole in the neighbouring window. A chunk is what an excerpt shows a student, and tokens cut
 * words anywhere ("Bof" / "al"), so windows began and ended inside words ("al et de", "ل الجفاف").
 */
export function tokenWindows(text: string, tokenizer: Tokenizer, size: number, overlap: number): { text: string; tokens: number }[] {
  if (overlap >= size) throw new Error('overlap must be smaller than the chunk size')
  const tokens = tokenizer.encode(text)
  if (tokens.length === 0) return []
  // whether the text between tokens b - 1 and b parts two words (or is no word's inside)
  const betweenWords = (b: number) => {
    if (b <= 0 || b >= tokens.length) return true
    const left = Array.from(tokenizer.decode(tokens.slice(Math.max(0, b - 4), b))).at(-1) ?? ' '
    const right = Array.from(tokenizer.decode(tokens.slice(b, b + 4)))[0] ?? ' '
    if (left === REPLACEMENT || right === REPLACEMENT) return false
    return !WORD_CHAR.test(left) || !WORD_CHAR.test(right)
  }
  const windows: { text: string; tokens: number }[] = []
  let previousEnd = 0
  for (let start = 0; start < tokens.length;) {
    let from = start
    for (let b = start; b < previousEnd; b++) {
      if (betweenWords(b)) {
        from = b
        break
      }
    }
    let end = Math.min(tokens.length, from + size)
    for (let b = end, least = Math.max(from + 1, end - Math.floor(overlap / 2)); b >= least; b--) {
      if (betweenWords(b)) {
        end = b
        break
      }
    }
    let decoded = tokenizer.decode(tokens.slice(from, end))
    while (end < tokens.length && decoded.endsWith(REPLACEMENT)) decoded = tokenizer.decode(tokens.slice(from, ++end))
    while (decoded.startsWith(REPLACEMENT) && from < end) decoded = tokenizer.decode(tokens.slice(++from, end))
    const trimmed = decoded.trim()
    if (trimmed) windows.push({ text: trimmed, tokens: end - from })
    if (end >= tokens.length) break
    previousEnd = end
    start = Math.max(end - overlap, start + 1)
  }
  return windows
}

/** Character windows of `size` with `overlap`, by code point (never half a surrogate pair). */
export function charWindows(text: string, size: number, overlap: number): string[] {
  if (overlap >= size) throw new Error('overlap must be smaller than the chunk size')
  const chars = Array.from(text)
  const out: string[] = []
  for (let start = 0; start < chars.length; start += size - overlap) {
    const piece = chars.slice(start, start + size).join('').trim()
    if (piece) out.push(piece)
    if (start + size >= chars.length) break
  }
  return out
}

export function chunkPages(
  pages: readonly { number: number; text: string }[],
  split: (text: string) => { text: string; tokens?: number }[],
): TextChunk[] {
  const chunks: TextChunk[] = []
  for (const page of pages) {
    split(page.text).forEach((w, i) =>
      chunks.push({ page_number: page.number, chunk_index: i, text: w.text, ...(w.tokens === undefined ? {} : { token_count: w.tokens }) })
    )
  }
  return chunks
}

/** The chunk id of spec §2.4: sha256 of `file_id:page_number:chunk_index`, hex. */
export async function chunkId(fileId: string, pageNumber: number, chunkIndex: number): Promise<string> {
  const digest = await crypto.subtle.digest('SHA-256', new TextEncoder().encode(`${fileId}:${pageNumber}:${chunkIndex}`))
  return Array.from(new Uint8Array(digest), (b) => b.toString(16).padStart(2, '0')).join('')
}
