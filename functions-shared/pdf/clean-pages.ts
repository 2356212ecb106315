// The pages of a read PDF as every path keeps them (the scraper's judgement, the ingestion job, a manual
// upload): running heads and feet dropped, the hyphens of words the layout broke at a line's end joined,
// the text canonicalized (as written: chunks are quoted to students), and pages with too little content
// (measured on the folded form) left out.
import { canonicalize, type CanonicalizeOptions, matchingForm } from '../text/canonicalize.ts'
import { joinHyphenatedWords } from '../text/hyphenation.ts'
import { withoutRunningLines } from '../text/running-lines.ts'
import type { ReadPage } from './read.ts'

export function cleanPages(pages: readonly ReadPage[], minChars: number, options: CanonicalizeOptions = {}): ReadPage[] {
  return joinHyphenatedWords(withoutRunningLines(pages))
    .map((p) => ({ number: p.number, text: canonicalize(p.text, options), source: p.source, confidence: p.confidence }))
    .filter((p) => matchingForm(p.text, options).length >= minChars)
}
