// How the catalogue applies a scraper source (sources-file.ts): the hosts its downloads may reach, and
// what its rules read from a listing's link.
import { parseHostList } from '../net/host-entry.ts'
import { canonicalSubject, levelForm } from './namespace.ts'
import type { Source, SourceRule } from '../sources-file.ts'

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

/** What a listing says about one link, as the rules read it (see RuleFrom in sources-file.ts). */
export interface LinkFacts {
  url: string
  text: string
  context?: string
  /** the link's attributes, names in lower case */
  attrs?: Record<string, string>
  /** the header of the table column the link sits in; null outside a table with a header row */
  column_header?: string | null
  /** the headings the link sits under, outermost first, joined by " › "; null under none */
  heading?: string | null
  /** the text of the row, list item or paragraph the link is the only link of, without the link's text */
  item?: string | null
}

/**
 * A link text that names no lesson: the word of a download button ("Télécharger", "PDF", "تحميل"), or
 * nothing (an icon). Its row or list item says the lesson's title.
 */
const GENERIC_LINK =
  /^(?:(?:t[ée]l[ée]charger|download|voir|lire|ouvrir|consulter|afficher|cliquez ici|cliquer ici|ici|lien|fichier|document|pdf|تحميل|تنزيل|اضغط هنا|انقر هنا|هنا|عرض|اقرأ|قراءة|الملف|رابط)(?:\s+(?:le|la|ce|du|en)?\s*(?:pdf|fichier|document|cours|le cours|la leçon|الملف|الدرس))?)?[\s.:!»›>()\[\]-]*$/iu

/**
 * A URL's text percent-decoded: escapes that spell UTF-8 as UTF-8, others as windows-1252, the encoding a
 * legacy portal writes them in (`math%E9matiques.pdf` is mathématiques). decodeURIComponent throws on
 * those, and every link of that kind was lost on every sync (counted as an error). A `%` that starts no
 * escape (a bare `100%.pdf`) stays as written.
 */
export function decodeUrlText(text: string): string {
  return text.replace(/(?:%[0-9a-f]{2})+/gi, (run) => {
    try {
      return decodeURIComponent(run)
    } catch {
      return WINDOWS_1252.decode(Uint8Array.from(run.slice(1).split('%'), (h) => Number.parseInt(h, 16)))
    }
  })
}
const WINDOWS_1252 = new TextDecoder('windows-1252')

/** The text a rule's pattern runs over, or null when the link has no such thing (the rule is skipped). */
function ruleInput(rule: SourceRule, link: LinkFacts): string | null {
  switch (rule.from) {
    case 'text':
      return link.text
    case 'url':
      return decodeUrlText(link.url)
    case 'context':
      return link.context ?? ''
    case 'attr':
      return link.attrs?.[rule.attr!.toLowerCase()] ?? null
    case 'column_header':
      return link.column_header ?? null
    case 'heading':
      return link.heading ?? null
  }
}

/** The metadata of one discovered PDF from the source's defaults and rules. */
export function linkMetadata(source: Source, link: LinkFacts): LinkMetadata {
  const meta: LinkMetadata = {
    // a link that says only "Télécharger" (or shows an icon) is titled by its row or list item, as a reader
    // reads the row; every such lesson of a portal was titled "Télécharger", in the catalogue and in each
    // answer quoting it
    title: (GENERIC_LINK.test(link.text.trim()) && link.item ? link.item : link.text.trim()) ||
      decodeUrlText(new URL(link.url).pathname.split('/').pop() ?? '').replace(/\.pdf$/i, '') || null,
    major: source.defaults.major ?? null,
    category: source.defaults.category ?? null,
    grade: source.defaults.grade ?? null,
    subject: source.defaults.subject ?? null,
    language: source.defaults.language ?? null,
    weight: source.defaults.weight ?? 0,
  }
  for (const rule of source.rules) {
    const input = ruleInput(rule, link)
    if (input === null) continue
    const m = new RegExp(rule.pattern, 'iu').exec(input)
    if (!m) continue
    const value = rule.value ?? m[1] ?? m[0]
    if (rule.field === 'weight') meta.weight = Number.parseInt(value, 10) || 0
    else if (rule.field === 'language') meta.language = (['fr', 'ar', 'hassaniya'] as const).find((l) => l === value) ?? meta.language
    else meta[rule.field] = value
  }
  // a listing's text is as long as its webmaster made it: a link of 120,000 characters became a title that
  // every chat turn quoting the document sent to the model, once per passage
  // the grade and subject in the form a question names them, as an upload stores them (filterForms):
  // a column headed "Sciences Naturelles" or a path's "Education_Islamique" is the subject a student
  // names as sciences-naturelles or education-islamique. A value with nothing in that form (a subject in
  // Arabic script) stays as given: no question can name it, the catalogue's inference can still find it
  // (a grade as one level whatever its spelling: "5ème AS", "5 AS" and "5-as" are 5AS, levelForm)
  meta.grade = meta.grade === null ? null : (levelForm(meta.grade) ?? (meta.grade.trim() || null))
  // (a subject as the catalogue names it, whatever the portal's own slug or name: SVT, SN and العلوم
  // الطبيعية are sciences-naturelles, canonicalSubject; one the catalogue does not know keeps its slug)
  meta.subject = meta.subject === null ? null : (canonicalSubject(meta.subject) ?? (meta.subject.trim() || null))
  meta.title = bounded(meta.title, MAX_TITLE_CHARS)
  meta.major = bounded(meta.major, MAX_LABEL_CHARS)
  meta.category = bounded(meta.category, MAX_LABEL_CHARS)
  return meta
}

/** The longest title and major or category a listing gives a reference: what an operator may set (PATCH /admin/references). */
export const MAX_TITLE_CHARS = 300
export const MAX_LABEL_CHARS = 100

/** Whitespace collapsed and, past `max` characters, cut with an ellipsis (never inside a surrogate pair). */
function bounded(value: string | null, max: number): string | null {
  if (value === null) return null
  const text = value.replace(/\s+/g, ' ').trim()
  const chars = Array.from(text)
  return chars.length <= max ? text : `${chars.slice(0, max - 1).join('').trimEnd()}…`
}
