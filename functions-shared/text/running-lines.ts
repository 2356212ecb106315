// Running heads and feet: the lines a document repeats at the top or bottom of its pages (the school
// and the ministry, the subject and the grade, "Page 3 / 12"). They say nothing of the page they sit on,
// yet in every chunk they would be matched by any question that names them, quoted in extractive
// answers, and weigh in each page's embedding. They are read off the pages' text before it is
// canonicalized (while it still has its lines) and kept only on the first page that has them, so the
// document still says once what it is.

/** lines read at each end of a page */
const EDGE_LINES = 2
/** a running line is on at least this share of the pages, and on at least MIN_PAGES of them */
const SHARE = 0.5
const MIN_PAGES = 3
/** longer lines are text, not a head or a foot */
const MAX_LINE = 120

/** A line as its repetitions compare: NFKC, lower case, every number as #, spaces collapsed. */
const lineKey = (line: string) =>
  line
    .normalize('NFKC')
    .toLowerCase()
    .replace(/\p{N}+/gu, '#')
    .replace(/\s+/gu, ' ')
    .trim()

/** The indices of a page's first and last EDGE_LINES non-empty lines. */
function edgeIndices(lines: readonly string[]): number[] {
  const filled = lines.flatMap((l, i) => (l.trim() === '' ? [] : [i]))
  return [...new Set([...filled.slice(0, EDGE_LINES), ...filled.slice(-EDGE_LINES)])]
}

/**
 * The pages without their running heads and feet: a line at either end of a page (its first or last two
 * non-empty lines) whose key comes back at an end of at least half the pages, and of three at the least,
 * is removed from every page but the first that has it. A document of fewer than three pages is left as
 * it is.
 */
export function withoutRunningLines<T extends { text: string }>(pages: readonly T[]): T[] {
  if (pages.length < MIN_PAGES) return [...pages]
  const split = pages.map((p) => p.text.split('\n'))
  const counts = new Map<string, number>()
  for (const lines of split) {
    const keys = new Set(edgeIndices(lines).map((i) => lineKey(lines[i]!)).filter((k) => k !== '' && k.length <= MAX_LINE))
    for (const k of keys) counts.set(k, (counts.get(k) ?? 0) + 1)
  }
  const needed = Math.max(MIN_PAGES, Math.ceil(pages.length * SHARE))
  const running = new Set([...counts].filter(([, n]) => n >= needed).map(([k]) => k))
  if (running.size === 0) return [...pages]
  const seen = new Set<string>()
  return pages.map((page, p) => {
    const lines = split[p]!
    const drop = new Set(
      edgeIndices(lines).filter((i) => {
        const k = lineKey(lines[i]!)
        if (!running.has(k)) return false
        if (seen.has(k)) return true
        seen.add(k)
        return false
      }),
    )
    return drop.size === 0 ? page : { ...page, text: lines.filter((_, i) => !drop.has(i)).join('\n') }
  })
}
