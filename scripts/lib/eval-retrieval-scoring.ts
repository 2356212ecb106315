// How an answer of `npm run eval:retrieval` counts: the tally of a row of its table, one answer scored in
// it by the rank of the right page and lesson among its sources, and the percentages printed.

export interface Tally {
  n: number
  page1: number
  doc1: number
  doc3: number
  rr: number
  clarified: number
}

export type Sources = { document_id: string; page_number: number }[]

/** counts one answer in a tally: its path, and the rank of the right page and lesson among its sources; the rank of the right page (0: not among them) */
export const score = (t: Tally, res: Record<string, unknown>, right: { doc: string; page: number }[]): number => {
  const sources = (res.sources ?? []) as Sources
  t.n++
  if (res.path === 'clarify') t.clarified++
  const rank = sources.findIndex((s) => right.some((r) => s.document_id === r.doc && s.page_number === r.page)) + 1
  const rightDoc = (s: { document_id: string } | undefined) => right.some((r) => s?.document_id === r.doc)
  if (rank === 1) t.page1++
  if (rank > 0) t.rr += 1 / rank
  if (rightDoc(sources[0])) t.doc1++
  if (sources.slice(0, 3).some(rightDoc)) t.doc3++
  return rank
}

export const pct = (x: number, n: number) => (n === 0 ? '  -  ' : `${((100 * x) / n).toFixed(1).padStart(5)}%`)
