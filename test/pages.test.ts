// The rerank reads the candidates page by page (functions-shared/chat/pages.ts): a page's windows
// joined in reading order with their overlap once, and the ranking given back as chunks.
import { describe, expect, it } from 'vitest'
import { candidatePages, joinWindows, type PagedChunk, rerankByPage } from '../functions-shared/chat/pages.ts'
import { createOfflineProvider } from '../functions-shared/ai/offline.ts'
import type { AiProvider } from '../functions-shared/ai/provider.ts'
import { tokenWindows } from '../functions-shared/ingestion/chunk.ts'
import { cl100k } from '../functions-shared/ingestion/tokenizer.ts'

const chunk = (file_id: string, page_number: number, chunk_index: number, text: string, distance = 0.5): PagedChunk => ({
  file_id,
  page_number,
  chunk_index,
  text,
  distance,
})

describe('joinWindows', () => {
  it('writes the overlap of two windows once, and joins windows that share nothing with a space', () => {
    expect(joinWindows("Le muscle se contracte. Il consomme de l'ATP.", "Il consomme de l'ATP. Le stock est petit.")).toBe(
      "Le muscle se contracte. Il consomme de l'ATP. Le stock est petit.",
    )
    expect(joinWindows('الصوم ركن من أركان الإسلام. يبدأ بطلوع الفجر', 'يبدأ بطلوع الفجر وينتهي بغروب الشمس.')).toBe(
      'الصوم ركن من أركان الإسلام. يبدأ بطلوع الفجر وينتهي بغروب الشمس.',
    )
    expect(joinWindows('Première partie.', 'Troisième partie.')).toBe('Première partie. Troisième partie.')
    // an overlap shorter than a few words may be chance: not taken
    expect(joinWindows('Il part.', 'part. Ensuite')).toBe('Il part. part. Ensuite')
  })

  it('puts back the text of a page that the tokenizer cut into overlapping windows', () => {
    const page = Array.from({ length: 60 }, (_, i) => `الجملة رقم ${i} من الصفحة تتحدث عن الزكاة والصيام والصلاة.`).join(' ')
    const windows = tokenWindows(page, cl100k, 384, 48).map((w) => w.text)
    expect(windows.length).toBeGreaterThan(2)
    expect(windows.reduce(joinWindows)).toBe(page)
  })
})

describe('candidatePages', () => {
  it('groups the candidates by document and page, in the order each page first comes, its text in reading order', () => {
    const pages = candidatePages([
      chunk('a', 2, 5, 'B du milieu de la page deux.', 0.4),
      chunk('b', 2, 0, 'autre document.', 0.3),
      chunk('a', 2, 4, 'A au début de la page deux. B du milieu de la page deux.', 0.6),
      chunk('a', 1, 0, 'page un.', 0.2),
    ])
    expect(pages.map((p) => p.members)).toEqual([[0, 2], [1], [3]])
    expect(pages[0]!.text).toBe('A au début de la page deux. B du milieu de la page deux.')
    expect(pages.map((p) => p.similarity)).toEqual([0.6, 0.7, 0.8])
  })

  it("measures a page's nearness by its chunks' fused score when the search was hybrid, else by their cosine", () => {
    const hybrid = candidatePages([{ ...chunk('a', 1, 0, 'un', 0.1), score: 0.02 }, { ...chunk('a', 1, 1, 'deux', 0.9), score: 0.03 }, {
      ...chunk('b', 1, 0, 'trois', 0.5),
      score: 0.01,
    }])
    expect(hybrid.map((p) => p.similarity)).toEqual([0.03, 0.01])
  })

  it("breaks a tie of the offline rerank's shares by the fused score when the search was hybrid, else by the cosine", async () => {
    // both pages hold the question's two keys; the full-text branch ranked the second first, the dense one the first
    const chunks = [{ ...chunk('a', 1, 0, "L'argent de la commune.", 0.2), score: 0.016 }, {
      ...chunk('b', 1, 0, 'La commune et son argent.', 0.6),
      score: 0.032,
    }]
    expect(await rerankByPage(createOfflineProvider(), "l'argent de la commune", chunks, 2)).toEqual([1, 0])
    expect(await rerankByPage(createOfflineProvider(), "l'argent de la commune", chunks.map(({ score: _, ...c }) => c), 2)).toEqual([0, 1])
  })
})

describe('rerankByPage', () => {
  it("gives back one chunk of each page in the ranking's order, then the pages' other chunks; a page the ranking leaves out is left out", async () => {
    const ranking: AiProvider = { ...createOfflineProvider(), rerank: async (_q, documents) => (documents.length === 3 ? [2, 0] : []) }
    const chunks = [chunk('a', 1, 0, 'un'), chunk('a', 2, 1, 'deux'), chunk('a', 1, 1, 'un bis'), chunk('a', 3, 2, 'trois'), chunk('a', 3, 3, 'trois bis')]
    expect(await rerankByPage(ranking, 'q', chunks, 2)).toEqual([3, 0, 4, 2])
  })

  it('ranks a page by everything its chunks hold together (the offline rerank)', async () => {
    const question = 'vitesse moyenne du cycliste sur une piste en pente au chronomètre'
    const chunks = [
      chunk('a', 1, 0, 'La vitesse moyenne du cycliste est une distance divisée par une durée. Il part du haut.'),
      chunk('a', 1, 1, 'Il part du haut. Sur une piste en pente, on lit la durée au chronomètre.'),
      chunk('a', 2, 2, 'La vitesse moyenne du cycliste se mesure sur une piste plate.'),
    ]
    const offline = createOfflineProvider()
    // each window alone holds fewer of the question's words than page 2
    expect((await offline.rerank(question, chunks.map((c) => c.text), 3))[0]).toBe(2)
    expect(await rerankByPage(offline, question, chunks, 3)).toEqual([0, 2, 1])
  })

  it("gives the provider each page's lesson topic, and the offline rerank puts the lesson the question names first", async () => {
    const seen: (readonly (string | null)[] | undefined)[] = []
    const recording: AiProvider = {
      ...createOfflineProvider(),
      rerank: async (_q, documents, _n, _s, _sim, topics) => (seen.push(topics), documents.map((_, i) => i)),
    }
    const photosynthesis = 'Leçon 4 : la photosynthèse.'
    const respiration = 'Leçon 5 : la respiration cellulaire.'
    const chunks = [
      { ...chunk('a', 2, 0, "La respiration, c'est quoi ? On la compare à la photosynthèse.", 0.1), topic: photosynthesis },
      { ...chunk('b', 3, 0, "Dans la mitochondrie, la respiration libère l'énergie.", 0.2), topic: respiration },
      { ...chunk('a', 2, 1, 'Les feuilles vertes.', 0.3), topic: photosynthesis },
    ]
    await rerankByPage(recording, 'q', chunks, 2)
    expect(seen).toEqual([[photosynthesis, respiration]])
    // the two pages hold the question's one key alike, and the search put the first nearer: the topic decides
    expect(await rerankByPage(createOfflineProvider(), "la respiration, c'est quoi ?", chunks, 2)).toEqual([1, 0, 2])
    expect(await rerankByPage(createOfflineProvider(), "la respiration, c'est quoi ?", chunks.map(({ topic: _, ...c }) => c), 2)).toEqual([0, 1, 2])
  })
})
