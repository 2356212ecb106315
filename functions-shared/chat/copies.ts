// A lesson published twice (a second upload, a re-typeset edition, a scan of the printed book) is one
// reference only when its SimHash is within the duplicate threshold (spec §1); a copy that differs a
// little more (a header, a page dropped, misread words) is ingested as a document of its own, and its
// pages then come back beside the original's, as two sources that say the same thing. Such a candidate
// is left out of the turn's retrieval: of two candidates of different documents whose words are nearly
// the same, the one of the document ingested first stays (the first discovered is the canonical one),
// and the turn's sources are the lesson's pages once.
import { allKeysOf } from '../text/keys.ts'

/**
 * The share of the smaller passage's distinct content keys that the other holds at which two passages of
 * different documents are one. Measured on the demo curriculum's 105 pages: two pages of different
 * lessons share at most 0.50 of them (acids and bases, weak acids), a page and its copy with a header
 * line added and 15 % of its words misread (as a scan's recognizer misreads them) at least 0.69 and 0.88
 * for the median page. (The Jaccard index, which counts the misread words of both, fell to 0.40.)
 */
export const COPY_SIMILARITY = 0.75
/** Passages of fewer distinct content keys are never taken for copies (a title, a line of a table). */
export const COPY_MIN_KEYS = 12

interface Copyable {
  file_id: string
  ingestion_ts: string | null
  text: string
}

/** Whether the smaller set's share of keys that the other holds reaches COPY_SIMILARITY (the count stops once it cannot). */
function copies(a: ReadonlySet<string>, b: ReadonlySet<string>): boolean {
  const [small, large] = a.size <= b.size ? [a, b] : [b, a]
  let missing = (1 - COPY_SIMILARITY) * small.size // keys the smaller one may lack and still be a copy
  for (const k of small) if (!large.has(k) && --missing < 0) return false
  return true
}

/** a before b: the document ingested first, then the smaller id (a timestamp-less one comes last) */
function older(a: Copyable, b: Copyable): boolean {
  if (a.ingestion_ts !== b.ingestion_ts) return b.ingestion_ts === null || (a.ingestion_ts !== null && a.ingestion_ts < b.ingestion_ts)
  return a.file_id < b.file_id
}

/**
 * The candidates without those that copy a candidate of another document (COPY_SIMILARITY of the
 * smaller one's content keys in the other, both holding COPY_MIN_KEYS or more); of a copy and its original, the one of the document
 * ingested first stays, at the better of the two ranks.
 */
export function withoutCopies<T extends Copyable>(candidates: readonly T[]): T[] {
  // the content keys of each (those of its sentences, which the rerank and the excerpts cache by text)
  const keys = candidates.map((c) => allKeysOf(c.text))
  // the candidate that stands for each one: itself, or the older of it and a copy of it
  const keeper = candidates.map((_, i) => i)
  const root = (i: number): number => (keeper[i] === i ? i : root(keeper[i]!))
  for (let i = 0; i < candidates.length; i++) {
    if (keys[i]!.size < COPY_MIN_KEYS) continue
    for (let j = i + 1; j < candidates.length; j++) {
      if (keys[j]!.size < COPY_MIN_KEYS) continue
      const [a, b] = [root(i), root(j)]
      if (a === b || candidates[a]!.file_id === candidates[b]!.file_id) continue
      if (copies(keys[i]!, keys[j]!)) {
        if (older(candidates[a]!, candidates[b]!)) keeper[b] = a
        else keeper[a] = b
      }
    }
  }
  const out: T[] = []
  const placed = new Set<number>()
  for (let i = 0; i < candidates.length; i++) {
    const k = root(i)
    if (!placed.has(k)) {
      placed.add(k)
      out.push(candidates[k]!)
    }
  }
  return out
}
