// Discovery: the PDF links of a source's listing pages, following rel="next" pagination, with what the
// markup says about each (the rules of sources.ts read it).
import * as cheerio from 'cheerio'
import { safeFetch, type SafeFetchOptions } from '../net/safe-fetch.ts'
import { allowedHosts, type LinkFacts } from './sources.ts'
import type { Source } from '../sources-file.ts'
import { columnHeader, CONTEXTS, type DomNode, headingsOf, ITEMS, leadingText, nearest, squash } from './listing-dom.ts'

export interface DiscoveredLink extends LinkFacts {
  /** the text around the link: its list item, table row, paragraph, definition, article or section */
  context: string
  /** the link's attributes (names in lower case, values with whitespace collapsed) */
  attrs: Record<string, string>
  /** the text of the header cell above the link's table column; null outside a table with a header row */
  column_header: string | null
  /** the headings (h1–h6) the link sits under in the page, outermost first, joined by " › "; null under none */
  heading: string | null
  /** the text of the list item, table row, paragraph or definition the link is the only link of, without the link's own text; null otherwise */
  item: string | null
  listing: string
}

export const MAX_LISTING_DEPTH = 2_000
// the elements a page nests by writing them inside one another: ones the parser never closes by itself
// (a <p>, <li> or <td> left open is closed by the next; a formatting tag like <b> is not nested past a few)
// (the attributes stop at the next < as well as at >, so that text without a > is read once, not once per tag)
const CONTAINER = /<(\/?)(div|span|section|article|aside|nav|main|header|footer|table|ul|ol|dl|blockquote|form|fieldset|figure|details|center)\b([^<>]*)>/giu

/** The deepest the page nests its container elements, counted from their tags as written. */
export function nestingDepth(html: string): number {
  let depth = 0
  let deepest = 0
  for (const m of html.matchAll(CONTAINER)) {
    if (m[1]) depth = Math.max(0, depth - 1)
    else if (!m[3]!.endsWith('/')) deepest = Math.max(deepest, ++depth)
  }
  return deepest
}

/** The labels a listing's encoding may be given by that this decoder reads (WHATWG Encoding's names and aliases). */
function decoderFor(label: string | undefined | null): TextDecoder | null {
  if (!label) return null
  try {
    return new TextDecoder(label.trim().replace(/^["']|["']$/g, ''))
  } catch {
    return null // a label no decoder knows is no label
  }
}

const META_CHARSET = /<meta\b[^>]*?\bcharset\s*=\s*["']?\s*([\w.:-]+)/i

/**
 * A listing page's text. HTML says which encoding it is in, in this order (the HTML standard's sniffing,
 * abridged): a byte order mark, the charset of the response's Content-Type, a <meta charset> or <meta
 * http-equiv="Content-Type"> within its first 1,024 bytes. A page that says none is UTF-8 when it reads as
 * UTF-8; else it is one of the single-byte encodings older portals write: windows-1256 (Arabic) when most of
 * its letters are bytes above 127, as an Arabic text's are, windows-1252 (French) when few are, as a
 * French text's accented letters. A Mauritanian portal in windows-1256 read as UTF-8 gave every Arabic
 * link text as U+FFFD, so no rule could read a grade or a subject from it.
 */
export function decodeListing(bytes: Uint8Array, contentType: string): string {
  if (bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf) return new TextDecoder('utf-8').decode(bytes)
  if (bytes[0] === 0xfe && bytes[1] === 0xff) return new TextDecoder('utf-16be').decode(bytes)
  if (bytes[0] === 0xff && bytes[1] === 0xfe) return new TextDecoder('utf-16le').decode(bytes)
  const declared = decoderFor(/;\s*charset\s*=\s*([^;]+)/i.exec(contentType)?.[1]) ??
    decoderFor(META_CHARSET.exec(new TextDecoder('latin1').decode(bytes.subarray(0, 1024)))?.[1])
  // a page cannot be in UTF-16 and hold ASCII markup that says so: such a <meta> means UTF-8 (the standard's rule)
  if (declared) return (declared.encoding.startsWith('utf-16') ? new TextDecoder('utf-8') : declared).decode(bytes)
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(bytes)
  } catch {
    let high = 0
    let letters = 0
    for (const b of bytes) {
      if (b >= 0xc0) high++
      if (b >= 0xc0 || (b >= 0x41 && b <= 0x5a) || (b >= 0x61 && b <= 0x7a)) letters++
    }
    return new TextDecoder(high > letters * 0.3 ? 'windows-1256' : 'windows-1252').decode(bytes)
  }
}

/**
 * The PDFs an HTML page served where a PDF was linked leads to: `named`, the PDF URLs the link's own query
 * names (a viewer's link, `viewer.html?file=%2Fcours%2Fa.pdf`, whose page reads its file with a script);
 * `shown`, those the page shows or goes to (a `<meta http-equiv="refresh">`, an iframe, embed or object);
 * `linked`, those it links (a download page's "click here", but also a PDF in every page's template). Each is an http(s) URL whose path and query match `pdf`, in the page's order,
 * once; links relative to the page's `<base href>`.
 */
export function pdfsOfPage(
  bytes: Uint8Array,
  contentType: string,
  pageUrl: string,
  linkUrl: string,
  pdf: RegExp,
): { named: string[]; shown: string[]; linked: string[] } {
  const accept = (candidate: string | undefined, base: string, into: string[]) => {
    if (!candidate || !URL.canParse(candidate.trim(), base)) return
    const u = new URL(candidate.trim(), base)
    u.hash = ''
    if ((u.protocol === 'http:' || u.protocol === 'https:') && pdf.test(u.pathname + u.search) && !into.includes(u.toString())) into.push(u.toString())
  }
  const named: string[] = []
  for (const [, value] of new URL(linkUrl).searchParams) {
    // a value that is a path or a URL, not a bare file name a script serves (download.php?file=a.pdf)
    if (/^(?:https?:\/\/|\/)/i.test(value.trim())) accept(value, linkUrl, named)
  }
  // read as a listing page is: no larger, nested no deeper
  if (bytes.byteLength > MAX_PAGE_BYTES) return { named, shown: [], linked: [] }
  const html = decodeListing(bytes, contentType)
  if (nestingDepth(html) > MAX_LISTING_DEPTH) return { named, shown: [], linked: [] }
  const $ = cheerio.load(html)
  const baseHref = $('base[href]').first().attr('href')
  const base = baseHref && URL.canParse(baseHref, pageUrl) ? new URL(baseHref, pageUrl).toString() : pageUrl
  const shown: string[] = []
  $('meta[http-equiv]').each((_, el) => {
    if (($(el).attr('http-equiv') ?? '').toLowerCase() !== 'refresh') return
    accept(/url\s*=\s*['"]?([^'";]+)/i.exec($(el).attr('content') ?? '')?.[1], base, shown)
  })
  $('iframe[src], embed[src], object[data], source[src]').each((_, el) => accept($(el).attr('src') ?? $(el).attr('data'), base, shown))
  const linked: string[] = []
  $('a[href]').each((_, el) => accept($(el).attr('href'), base, linked))
  return { named, shown, linked }
}

/** The largest listing page, or page served where a PDF was linked, that is read. */
export const MAX_PAGE_BYTES = 5 * 1024 * 1024

/** A listing page that could not be read: its URL and why. */
export interface ListingFailure {
  url: string
  message: string
}

/**
 * The PDF links of a source's listing pages: its index URLs and the next pages they lead to. A listing
 * page that cannot be read (a broken link, a refused destination, a page nested too deep) is told to
 * `onListingError` and passed over, and the walk goes on with the others; without it, or when no listing
 * page at all could be read, the first failure is thrown.
 */
export async function discoverLinks(
  source: Source,
  fetchOptions: Omit<SafeFetchOptions, 'allowedHosts' | 'accept'>,
  onListingError?: (failure: ListingFailure) => void,
  /** awaited between one listing page (read or not) and the next: the walk's progress */
  onListingPage?: () => Promise<void>,
): Promise<DiscoveredLink[]> {
  const pdf = new RegExp(source.pdf_pattern, 'iu')
  const seenPages = new Set<string>()
  const seenLinks = new Map<string, DiscoveredLink>()
  const queue = [...source.index_urls]
  let read = 0
  let firstError: unknown
  while (queue.length > 0 && seenPages.size < source.max_listing_pages) {
    const pageUrl = queue.shift()!
    if (seenPages.has(pageUrl)) continue
    // the page before this one is done with
    if (seenPages.size > 0) await onListingPage?.()
    seenPages.add(pageUrl)
    let html: string
    let page: { url: string }
    try {
      const fetched = await safeFetch(pageUrl, { ...fetchOptions, allowedHosts: allowedHosts(source), accept: 'text/html,application/xhtml+xml' })
      page = fetched
      html = decodeListing(fetched.bytes, fetched.contentType)
      const depth = nestingDepth(html)
      if (depth > MAX_LISTING_DEPTH) throw new Error(`the listing page ${pageUrl} nests elements ${depth} deep (more than ${MAX_LISTING_DEPTH})`)
    } catch (err) {
      if (!onListingError) throw err
      firstError ??= err
      onListingError({ url: pageUrl, message: (err as Error).message })
      continue
    }
    read++
    const $ = cheerio.load(html)
    // links are relative to the page's <base href> when it has one
    const baseHref = $('base[href]').first().attr('href')
    const base = baseHref && URL.canParse(baseHref, page.url) ? new URL(baseHref, page.url).toString() : page.url
    const contexts = new Map<DomNode, string>()
    // per item (row, list item...): how many links it holds and its text, counted once per item
    const items = new Map<DomNode, { links: number; text: string }>()
    const itemOf = (item: DomNode) => {
      let known = items.get(item)
      if (!known) items.set(item, known = { links: $(item as never).find('a[href]').length, text: leadingText(item) })
      return known
    }
    const selected = $(source.link_selector)
    const headings = headingsOf($.root().get(0) as unknown as DomNode, new Set(selected.toArray() as unknown as DomNode[]))
    selected.each((_, el) => {
      const href = $(el).attr('href')
      if (!href) return
      let url: URL
      try {
        url = new URL(href, base)
      } catch {
        return
      }
      // a mailto:, ftp: or file: link is no document to download, whatever its name ends with
      if (url.protocol !== 'http:' && url.protocol !== 'https:') return
      url.hash = ''
      if (!pdf.test(url.pathname + url.search)) return
      const key = url.toString()
      if (seenLinks.has(key)) return
      const around = nearest(el as unknown as DomNode, CONTEXTS)
      let context = around ? contexts.get(around) : ''
      if (context === undefined) contexts.set(around!, context = leadingText(around!))
      const text = $(el).text().replace(/\s+/g, ' ').trim()
      const itemNode = nearest(el as unknown as DomNode, ITEMS)
      const item = itemNode ? itemOf(itemNode) : null
      const itemText = item && item.links === 1 ? squash(item.text.replace(text, ' ')).replace(/^[\s\-–—:|•·›»]+|[\s\-–—:|•·‹«]+$/gu, '') : ''
      const attrs = Object.fromEntries(Object.entries($(el).attr() ?? {}).map(([k, v]) => [k.toLowerCase(), squash(v)]))
      seenLinks.set(key, {
        url: key,
        text,
        item: itemText || null,
        context,
        attrs,
        column_header: columnHeader($, $(el)),
        heading: headings.get(el as unknown as DomNode) ?? null,
        listing: page.url,
      })
    })
    $(source.next_selector).each((_, el) => {
      const href = $(el).attr('href')
      // a link that is no URL leads nowhere: passed over, not the end of the run
      if (!href || !URL.canParse(href, base)) return
      // page2.html#top is page2.html: read once, and counted once against max_listing_pages
      const next = new URL(href, base)
      next.hash = ''
      queue.push(next.toString())
    })
  }
  // the walk stopped at max_listing_pages with pages left: their links were never seen, so say so (a
  // portal listing 2,000 PDFs 20 to a page lost 1,600 of them with a run that looked complete)
  const left = queue.find((url) => !seenPages.has(url))
  if (left !== undefined && onListingError) {
    onListingError({ url: left, message: `not read: the source's max_listing_pages (${source.max_listing_pages}) was reached` })
  }
  if (read === 0 && firstError !== undefined) throw firstError
  return [...seenLinks.values()]
}
