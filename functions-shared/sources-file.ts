// The scraper sources file (SCRAPER_SOURCES_FILE), configuration read by each process's entry next to
// its settings: where to look, which links are curriculum PDFs, how to read their metadata, what
// boilerplate to strip, which hosts downloads may reach. The catalogue applies it (catalogue/sources.ts).
import { z } from 'zod'
import { parseHostEntry } from './net/host-entry.ts'

const HostEntry = z.string().refine((v) => parseHostEntry(v) !== null, 'a host, host:port, or *.domain entry')

const Field = z.enum(['title', 'major', 'category', 'grade', 'subject', 'language', 'weight'])

/**
 * What a rule's pattern reads: `text` the link's text; `url` its URL (percent-decoded); `context` the text
 * of the element around it (its list item, table row, paragraph, definition, article or section); `attr`
 * one attribute of the link itself, named by `attr` (`title`, `data-subject`...); `column_header` the text
 * of the header cell above the link's table column; `heading` the headings (h1–h6) the link sits under,
 * outermost first, joined by " › " ("5AS › Mathématiques"). Portals often say the grade or subject only in
 * markup (a data attribute, a column heading), never in the link's text or URL.
 */
const RuleFrom = z.enum(['text', 'url', 'context', 'attr', 'column_header', 'heading'])
const Rule = z
  .object({
    field: Field,
    from: RuleFrom,
    /** the attribute `from: "attr"` reads (HTML attribute names are case-insensitive) */
    attr: z.string().regex(/^[A-Za-z_:][A-Za-z0-9_:.-]{0,63}$/, 'an HTML attribute name').optional(),
    pattern: z.string(),
    value: z.string().optional(),
  })
  .superRefine((rule, ctx) => {
    // a rule that silently never matches is a misconfiguration worth refusing at start
    if (rule.from === 'attr' && rule.attr === undefined) {
      ctx.addIssue({ code: 'custom', path: ['attr'], message: 'from "attr" needs the attribute\'s name in attr' })
    }
    if (rule.from !== 'attr' && rule.attr !== undefined) ctx.addIssue({ code: 'custom', path: ['attr'], message: 'attr is only read by from "attr"' })
  })
export type SourceRule = z.infer<typeof Rule>

export const SourceSchema = z.object({
  name: z.string().regex(/^[a-z0-9][a-z0-9-]{0,62}$/, 'a lower-case slug'),
  index_urls: z.array(z.url()).min(1),
  /** hosts (host or host:port; "*.domain" for subdomains) downloads may reach; default: the index URLs' host:port */
  allowed_hosts: z.array(HostEntry).min(1).optional(),
  /** CSS selector of candidate links (default every link) and a regex their URL must match */
  link_selector: z.string().default('a[href]'),
  pdf_pattern: z.string().default('\\.pdf($|[?#])'),
  /** CSS selector of the next listing page */
  next_selector: z.string().default('a[rel~="next"], link[rel~="next"]'),
  max_listing_pages: z.number().int().min(1).max(500).default(20),
  boilerplate: z.array(z.string()).default([]),
  defaults: z.object({
    major: z.string(),
    category: z.string(),
    grade: z.string(),
    subject: z.string(),
    language: z.enum(['fr', 'ar', 'hassaniya']),
    weight: z.number().int(),
  }).partial().default({}),
  /** regex rules, in order (a later match overrides an earlier one), each over one thing the listing
   *  says about a link (see RuleFrom); the first capture group (or `value`) sets the field */
  rules: z.array(Rule).default([]),
  taa_marbuta_to_ha: z.boolean().default(false),
  hamza_carriers: z.boolean().default(false),
})
export type Source = z.infer<typeof SourceSchema>

export const SourcesFileSchema = z.object({ sources: z.array(SourceSchema) }).superRefine((v, ctx) => {
  const names = new Set<string>()
  for (const [i, s] of v.sources.entries()) {
    if (names.has(s.name)) ctx.addIssue({ code: 'custom', path: ['sources', i, 'name'], message: `duplicate source name ${s.name}` })
    names.add(s.name)
    for (const p of [s.pdf_pattern, ...s.boilerplate, ...s.rules.map((r) => r.pattern)]) {
      try {
        new RegExp(p, 'u')
      } catch {
        ctx.addIssue({ code: 'custom', path: ['sources', i], message: `invalid regular expression: ${p}` })
      }
    }
  }
})

/**
 * The sources of a sources file. `${NAME}` inside a source is replaced by `vars.NAME`; a source that
 * names a variable this runtime does not know is left out and reported through `onSkip` (the local
 * stack knows PUBLIC_URL and PUBLIC_HOST, which the demo portal's source uses; Supabase knows none, so
 * the demo source is not served there).
 */
export function parseSources(text: string, vars: Record<string, string> = {}, onSkip?: (name: string, reason: string) => void): Source[] {
  const file = JSON.parse(text) as { sources?: unknown }
  if (Array.isArray(file.sources)) {
    file.sources = file.sources.flatMap((source: unknown) => {
      const json = JSON.stringify(source)
      const unknown = [...json.matchAll(/\$\{([A-Z_]+)\}/g)].map((m) => m[1]!).filter((n) => vars[n] === undefined)
      if (unknown.length > 0) {
        onSkip?.(String((source as { name?: unknown }).name ?? '?'), `uses \${${unknown[0]}}, which is not known here`)
        return []
      }
      return [JSON.parse(json.replace(/\$\{([A-Z_]+)\}/g, (_, n: string) => JSON.stringify(vars[n]!).slice(1, -1)))]
    })
  }
  return SourcesFileSchema.parse(file).sources
}
