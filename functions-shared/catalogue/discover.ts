// Discovery: the PDF links of a source's listing pages, following rel="next" pagination, with what the
// markup says about each (the rules of sources.ts read it).
import * as cheerio from 'cheerio'
import { safeFetch, type SafeFetchOptions } from '../net/safe-fetch.ts'
import { allowedHosts, type LinkFacts } from './sources.ts'
import type { Source } from '../sources-file.ts'

export interface DiscoveredLink extends LinkFacts {
  /** the text around the link: its list item, table row, paragraph, definition, article or section */
  context: string
  /** the link's attributes (names in lower case, values with whitespace collapsed) */
  attrs: Record<string, string>
  /** the text of the header cell above the link's table column; null outside a table with a header row */
  column_header: string | null
  listing: string
}

const squash = (s: string, max = 500) => s.replace(/\s+/g, ' ').trim().slice(0, max)
type Selection = ReturnType<cheerio.CheerioAPI>
/** A cell's colspan as browsers read it: a positive integer, 1 when absent or invalid, at most 1000. */
const spanOf = (cell: Selection) => {
  const n = Number.parseInt(cell.attr('colspan') ?? '', 10)
  return Number.isFinite(n) && n >= 1 ? Math.min(n, 1000) : 1
}

/**
 * The header of the column a link sits in: the cell of the table's header row (the first row of its
 * thead, else its first row when that row has a th) that covers the link's column, colspans counted on
 * both rows. Null when the link is not in a cell, the table has no header row, or the link is in it.
 * Rowspans are not followed: a header is read from the header row alone.
 */
export function columnHeader($: cheerio.CheerioAPI, link: Selection): string | null {
  const cell = link.closest('td, th')
  const row = cell.parent()
  if (cell.length === 0 || !row.is('tr')) return null
  const table = row.closest('table')
  // parse5 puts rows written straight in a table into a tbody, so rows are in the table's row groups
  const first = table.children('thead, tbody, tfoot, tr').first()
  const firstRow = first.is('tr') ? first : first.children('tr').first()
  const thead = table.children('thead').first()
  const header = thead.length > 0 ? thead.children('tr').first() : firstRow.children('th').length > 0 ? firstRow : null
  if (!header || header.length === 0 || header.get(0) === row.get(0)) return null
  let column = 0
  for (const c of row.children('td, th').toArray()) {
    if (c === cell.get(0)) break
    column += spanOf($(c))
  }
  let start = 0
  for (const h of header.children('td, th').toArray()) {
    const end = start + spanOf($(h))
    if (column < end) return squash($(h).text()) || null
    start = end
  }
  return null
}

export async function discoverLinks(source: Source, fetchOptions: Omit<SafeFetchOptions, 'allowedHosts' | 'accept'>): Promise<DiscoveredLink[]> {
  const pdf = new RegExp(source.pdf_pattern, 'iu')
  const seenPages = new Set<string>()
  const seenLinks = new Map<string, DiscoveredLink>()
  const queue = [...source.index_urls]
  while (queue.length > 0 && seenPages.size < source.max_listing_pages) {
    const pageUrl = queue.shift()!
    if (seenPages.has(pageUrl)) continue
    seenPages.add(pageUrl)
    const page = await safeFetch(pageUrl, { ...fetchOptions, allowedHosts: allowedHosts(source), accept: 'text/html,application/xhtml+xml' })
    const $ = cheerio.load(new TextDecoder().decode(page.bytes))
    $(source.link_selector).each((_, el) => {
      const href = $(el).attr('href')
      if (!href) return
      let url: URL
      try {
        url = new URL(href, page.url)
      } catch {
        return
      }
      url.hash = ''
      if (!pdf.test(url.pathname + url.search)) return
      const key = url.toString()
      if (seenLinks.has(key)) return
      const context = squash($(el).closest('li, tr, p, dd, article, section').text())
      const attrs = Object.fromEntries(Object.entries($(el).attr() ?? {}).map(([k, v]) => [k.toLowerCase(), squash(v)]))
      seenLinks.set(key, { url: key, text: $(el).text().replace(/\s+/g, ' ').trim(), context, attrs, column_header: columnHeader($, $(el)), listing: page.url })
    })
    $(source.next_selector).each((_, el) => {
      const href = $(el).attr('href')
      if (href) queue.push(new URL(href, page.url).toString())
    })
  }
  return [...seenLinks.values()]
}
