// A source's excerpt: the sentences of its chunk that hold most of the question's words, as written, at
// most EXCERPT_CHARS characters, with an ellipsis where text was left out before or after. A chunk is a
// page or more; its first sentences are often a heading and an introduction, not what answers.
import { questionKeys, sentencesOf } from '../text/keys.ts'

export const EXCERPT_CHARS = 280

/**
 * The run of whole sentences, within `max` characters, that holds the largest share of the keys of
 * `questions` (the student's message and the retrieval query, which differ when it was translated);
 * on a tie the run that opens with the sentence holding most of them, then the earliest; the chunk's
 * start when nothing matches. A sentence longer than `max` is cut at a word.
 */
export function excerpt(text: string, questions: readonly string[], max = EXCERPT_CHARS): string {
  return excerpts(questions, max)(text)
}

/**
 * excerpt for each source of one question. The question's keys are read against the chunk's own words,
 * as the offline rerank reads them against its candidates (questionKeys: فبحرنا meets البحر).
 */
export function excerpts(questions: readonly string[], max = EXCERPT_CHARS): (text: string) => string {
  return (text) => {
    if (text.length <= max) return text
    const vocabulary = new Set(sentencesOf(text).keys.flatMap((k) => [...k]))
    return bestRun(text, new Set(questions.flatMap((q) => [...questionKeys(q, vocabulary)])), max)
  }
}

function bestRun(text: string, wanted: ReadonlySet<string>, max: number): string {
  const { sentences, keys } = sentencesOf(text)
  let best = { start: 0, end: 1, score: -1, first: -1 }
  for (let start = 0; start < sentences.length; start++) {
    let end = start + 1
    let length = sentences[start]!.length
    while (end < sentences.length && length + 1 + sentences[end]!.length <= max - 4) length += 1 + sentences[end++]!.length
    const held = new Set<string>()
    for (let i = start; i < end; i++) for (const k of keys[i]!) if (wanted.has(k)) held.add(k)
    // on a tie, the run that opens with the sentence holding most of them
    const first = [...keys[start]!].filter((k) => wanted.has(k)).length
    if (held.size > best.score || (held.size === best.score && first > best.first)) best = { start, end, score: held.size, first }
  }
  const before = best.start > 0 ? '… ' : ''
  let body = sentences.slice(best.start, best.end).join(' ')
  const room = max - before.length - 2
  if (body.length > room) {
    // one sentence longer than the excerpt: cut at a word
    const cut = body.slice(0, room)
    const space = cut.lastIndexOf(' ')
    body = space > room / 2 ? cut.slice(0, space) : cut
    return `${before}${body} …`
  }
  return `${before}${body}${best.end < sentences.length ? ' …' : ''}`
}
