// Tokenizer agreement, chunking, chunk ids and the offline embedder.
import { createHash } from 'node:crypto'
import fc from 'fast-check'
import { getEncoding } from 'js-tiktoken'
import { describe, expect, it } from 'vitest'
import { defaultTokenizer } from '../functions-shared/ingestion/tokenizer.ts'
import { charWindows, chunkId, chunkPages, tokenWindows } from '../functions-shared/ingestion/chunk.ts'
import { createOfflineEmbedder, offlineVector } from '../functions-shared/ai/offline-embedder.ts'
import { AR_LESSON, FR_LESSON, PHYSICS_LESSON } from './helpers/portal.ts'

const reference = getEncoding('cl100k_base')
const cosine = (a: number[], b: number[]) => a.reduce((s, x, i) => s + x * b[i]!, 0)

describe('the cl100k_base tokenizer', () => {
  it('gives the same tokens as js-tiktoken on French and Arabic lessons', () => {
    for (const text of [FR_LESSON, AR_LESSON, PHYSICS_LESSON, `${AR_LESSON} ${FR_LESSON} 3x + 2 = 11`]) {
      expect(defaultTokenizer.encode(text)).toEqual(reference.encode(text))
    }
  })

  it('agrees with js-tiktoken on arbitrary text and round-trips it', () => {
    fc.assert(
      fc.property(fc.string({ unit: fc.constantFrom(...'abcéèàç ابتثجحخدذرزسشصضطظعغفقكلمنهوي،.:0123456789\n'.split('')), maxLength: 300 }), (text) => {
        const tokens = defaultTokenizer.encode(text)
        expect(tokens).toEqual(reference.encode(text))
        expect(defaultTokenizer.decode(tokens)).toBe(text)
      }),
      { numRuns: 200 },
    )
  })

  it('decodes any run of tokens as js-tiktoken does, a cut character as U+FFFD that does not leak into the next run', () => {
    const tokens = reference.encode(`${AR_LESSON} ${FR_LESSON} x² → uₙ₊₁ µm`)
    fc.assert(
      fc.property(fc.integer({ min: 0, max: tokens.length - 1 }), fc.integer({ min: 1, max: 12 }), (from, length) => {
        const slice = tokens.slice(from, from + length)
        const next = tokens.slice(from + length, from + 2 * length)
        expect(defaultTokenizer.decode(slice)).toBe(reference.decode(slice))
        expect(defaultTokenizer.decode(next)).toBe(reference.decode(next))
      }),
      { numRuns: 500 },
    )
  })
})

describe('token windows', () => {
  it('cuts 512-token windows overlapping by 64, never longer than the size', () => {
    const text = Array.from({ length: 30 }, () => FR_LESSON).join(' ')
    const total = defaultTokenizer.encode(text).length
    const windows = tokenWindows(text, defaultTokenizer, 512, 64)
    expect(windows.length).toBe(Math.ceil((total - 64) / (512 - 64)))
    expect(windows.every((w) => w.tokens <= 513)).toBe(true)
    // consecutive windows share their boundary text
    const tail = windows[0]!.text.slice(-40)
    expect(windows[1]!.text.includes(tail.slice(-20).trim())).toBe(true)
  })

  it('never splits an Arabic character, even where tokens cut UTF-8 sequences', () => {
    const text = Array.from({ length: 20 }, () => AR_LESSON).join(' ')
    for (const w of tokenWindows(text, defaultTokenizer, 384, 48)) expect(w.text).not.toContain('\uFFFD')
    fc.assert(
      fc.property(fc.integer({ min: 8, max: 64 }), fc.integer({ min: 0, max: 7 }), (size, overlap) => {
        for (const w of tokenWindows(AR_LESSON, defaultTokenizer, size, overlap)) expect(w.text).not.toContain('\uFFFD')
      }),
      { numRuns: 50 },
    )
  })

  it('starts and ends each window between two words, and loses no word', () => {
    const isWord = (c: string | undefined) => c !== undefined && /[\p{L}\p{M}\p{N}]/u.test(c)
    for (
      const [text, size, overlap] of [[Array.from({ length: 6 }, () => FR_LESSON).join(' '), 64, 12], [
        Array.from({ length: 6 }, () => AR_LESSON).join(' '),
        48,
        8,
      ]] as const
    ) {
      const windows = tokenWindows(text, defaultTokenizer, size, overlap)
      let at = 0
      const cut: string[] = []
      for (const w of windows) {
        const i = text.indexOf(w.text, Math.max(0, at - w.text.length))
        expect(i).toBeGreaterThanOrEqual(0)
        if (isWord(text[i - 1]) && isWord(w.text[0])) cut.push(`starts inside a word: ${w.text.slice(0, 20)}`)
        if (isWord(text[i + w.text.length]) && isWord(w.text.at(-1))) cut.push(`ends inside a word: ${w.text.slice(-20)}`)
        at = i + w.text.length
      }
      expect(cut).toEqual([])
      const held = new Set(windows.flatMap((w) => w.text.split(/\s+/)))
      for (const word of text.split(/\s+/)) expect(held.has(word), word).toBe(true)
    }
  })

  it('returns nothing for empty text and refuses an overlap as large as the size', () => {
    expect(tokenWindows('   ', defaultTokenizer, 10, 2)).toEqual([])
    expect(() => tokenWindows('x', defaultTokenizer, 10, 10)).toThrow()
  })
})

describe('character windows', () => {
  it('cuts 1000-character windows overlapping by 150', () => {
    const text = 'a'.repeat(2500)
    const windows = charWindows(text, 1000, 150)
    expect(windows.map((w) => w.length)).toEqual([1000, 1000, 800])
  })
  it('never cuts a surrogate pair', () => {
    const text = '𝑥'.repeat(30)
    for (const w of charWindows(text, 7, 2)) expect(Array.from(w).every((c) => c === '𝑥')).toBe(true)
  })
})

describe('chunks', () => {
  it('stay within their page and are numbered per page', () => {
    const chunks = chunkPages(
      [{ number: 1, text: 'a'.repeat(1500) }, { number: 2, text: 'b'.repeat(400) }],
      (t) => charWindows(t, 1000, 150).map((text) => ({ text })),
    )
    expect(chunks.map((c) => [c.page_number, c.chunk_index, c.text[0]])).toEqual([[1, 0, 'a'], [1, 1, 'a'], [2, 0, 'b']])
  })

  it('have the deterministic id sha256("file_id:page:index")', async () => {
    const fileId = '2f1c9a3e-5b7d-4e2a-9c1f-0a1b2c3d4e5f'
    expect(await chunkId(fileId, 3, 7)).toBe(createHash('sha256').update(`${fileId}:3:7`).digest('hex'))
    expect(await chunkId(fileId, 3, 7)).toBe(await chunkId(fileId, 3, 7))
    expect(await chunkId(fileId, 3, 8)).not.toBe(await chunkId(fileId, 3, 7))
  })
})

describe('the offline embedder', () => {
  it('gives deterministic, L2-normalized vectors of dimension 1536', async () => {
    const embedder = createOfflineEmbedder()
    const [a, b] = await embedder.embed([FR_LESSON, FR_LESSON])
    expect(a).toHaveLength(1536)
    expect(a).toEqual(b)
    expect(Math.abs(Math.hypot(...a!) - 1)).toBeLessThan(1e-9)
  })

  it('puts texts that share words nearer than unrelated ones, across accents and Arabic spellings', () => {
    const q = offlineVector('résoudre une équation du premier degré', 1536)
    expect(cosine(q, offlineVector(FR_LESSON, 1536))).toBeGreaterThan(cosine(q, offlineVector(PHYSICS_LESSON, 1536)))
    expect(cosine(offlineVector('equation premier degre', 1536), offlineVector('équation premier degré', 1536))).toBeCloseTo(1, 6)
    expect(cosine(offlineVector('أركان الإسلام', 1536), offlineVector('اركان الاسلام', 1536))).toBeCloseTo(1, 6)
    const arQ = offlineVector('ما هي أركان الإسلام', 1536)
    expect(cosine(arQ, offlineVector(AR_LESSON, 1536))).toBeGreaterThan(cosine(arQ, offlineVector(FR_LESSON, 1536)))
  })
})
