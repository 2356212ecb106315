// Scraper sources as configuration: where to look, which links are curriculum PDFs, how to read their
// metadata, what boilerplate to strip, which hosts downloads may reach.
import { z } from 'zod'
import { parseHostEntry, parseHostList } from '../net/host-entry.ts'

const HostEntry = z.string().refine((v) => parseHostEntry(v) !== null, 'a host, host:port, or *.domain entry')

const Field = z.enum(['title', 'major', 'category', 'grade', 'subject', 'language', 'weight'])

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
  defaults: z.object({ major: z.string(), category: z.string(), grade: z.string(), subject: z.string(), language: z.enum(['fr', 'ar', 'hassaniya']), weight: z.number().int() }).partial().default({}),
  /** regex rules over the link text, its URL or the markup around it (list item, table row, paragraph);
   *  the first capture group (or `value`) sets the field */
  rules: z.array(z.object({ field: Field, from: z.enum(['text', 'url', 'context']), pattern: z.string(), value: z.string().optional() })).default([]),
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

/** What downloads of this source may reach: its allowed_hosts, else the index URLs' hosts with their ports. */
export function allowedHosts(source: Source): string[] {
  return source.allowed_hosts ?? [...new Set(source.index_urls.map((u) => new URL(u).host))]
}

/** FETCH_ALLOWED_HOSTS as a list: what downloads of a reference whose source is not configured may reach. */
export const globalAllowlist = parseHostList

export interface LinkMetadata {
  title: string | null
  major: string | null
  category: string | null
  grade: string | null
  subject: string | null
  language: 'fr' | 'ar' | 'hassaniya' | null
  weight: number
}

/** The metadata of one discovered PDF from the source's defaults and rules. */
export function linkMetadata(source: Source, link: { url: string; text: string; context?: string }): LinkMetadata {
  const meta: LinkMetadata = {
    title: link.text.trim() || decodeURIComponent(new URL(link.url).pathname.split('/').pop() ?? '').replace(/\.pdf$/i, '') || null,
    major: source.defaults.major ?? null,
    category: source.defaults.category ?? null,
    grade: source.defaults.grade ?? null,
    subject: source.defaults.subject ?? null,
    language: source.defaults.language ?? null,
    weight: source.defaults.weight ?? 0,
  }
  for (const rule of source.rules) {
    const subject = rule.from === 'text' ? link.text : rule.from === 'url' ? decodeURIComponent(link.url) : (link.context ?? '')
    const m = new RegExp(rule.pattern, 'iu').exec(subject)
    if (!m) continue
    const value = rule.value ?? m[1] ?? m[0]
    if (rule.field === 'weight') meta.weight = Number.parseInt(value, 10) || 0
    else if (rule.field === 'language') meta.language = (['fr', 'ar', 'hassaniya'] as const).find((l) => l === value) ?? meta.language
    else meta[rule.field] = value
  }
  return meta
}
