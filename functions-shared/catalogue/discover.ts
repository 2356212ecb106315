// Discovery: the PDF links of a source's listing pages, following rel="next" pagination.
import * as cheerio from 'cheerio'
import { safeFetch, type SafeFetchOptions } from '../net/safe-fetch.ts'
import { allowedHosts, type Source } from './sources.ts'

export interface DiscoveredLink {
  url: string
  text: string
  /** the text around the link: its list item, table row or paragraph */
  context: string
  listing: string
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
      const context = $(el).closest('li, tr, p, dd, article, section').text().replace(/\s+/g, ' ').trim().slice(0, 500)
      seenLinks.set(key, { url: key, text: $(el).text().replace(/\s+/g, ' ').trim(), context, listing: page.url })
    })
    $(source.next_selector).each((_, el) => {
      const href = $(el).attr('href')
      if (href) queue.push(new URL(href, page.url).toString())
    })
  }
  return [...seenLinks.values()]
}
