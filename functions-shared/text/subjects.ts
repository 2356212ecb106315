// What the words of a question say about its subject, when the request does not say it. The catalogue
// decides (infer.ts); this file only helps it: the names by which a student names a subject ("en
// physique", "في التاريخ") and, to break a tie between two subjects the catalogue finds equally, stems
// of each subject's vocabulary in French and Arabic, matched on accent- and diacritic-free words. The
// keys are common subject slugs; a catalogue whose sources use other slugs is matched to them through
// SLUG_ALIASES and the words of the slug itself.
import { foldedWords } from './fold.ts'
import { LEXICON } from './subject-lexicon.ts'

/**
 * The names a student gives a subject in a question (folded as by normalizeWords, without the article):
 * "en physique", "en géo", "في التاريخ", "فالبلاغة". The French "arabe" is left out: "en arabe" names
 * a language more often than a subject.
 */
const NAMES: Record<string, string[]> = {
  mathematiques: ['mathematiques', 'mathematique', 'maths', 'math', 'رياضيات'],
  physique: ['physique', 'physiques', 'فيزياء', 'فيزيا'],
  chimie: ['chimie', 'كيمياء', 'كيميا'],
  'physique-chimie': ['physique chimie', 'sciences physiques', 'علوم فيزيائيه'],
  'sciences-naturelles': ['svt', 'sciences naturelles', 'sciences de la vie', 'biologie', 'علوم طبيعيه', 'علوم الطبيعه', 'احياء'],
  'education-islamique': ['education islamique', 'instruction islamique', 'instruction religieuse', 'تربيه اسلاميه', 'التربيه الاسلاميه', 'فقه'],
  arabe: ['langue arabe', 'grammaire arabe', 'لغه عربيه', 'اللغه العربيه', 'نحو', 'بلاغه', 'صرف'],
  francais: ['francais', 'لغه فرنسيه', 'فرنسيه'],
  anglais: ['anglais', 'english', 'انجليزيه', 'انكليزيه'],
  histoire: ['histoire', 'تاريخ'],
  geographie: ['geographie', 'geo', 'جغرافيا', 'جغرافيه'],
  'histoire-geographie': ['histoire geographie', 'histoire geo', 'تاريخ والجغرافيا'],
  philosophie: ['philosophie', 'philo', 'فلسفه'],
  'education-civique': ['education civique', 'instruction civique', 'تربيه مدنيه', 'التربيه المدنيه'],
}

/** Other slugs portals give the same subjects. */
const SLUG_ALIASES: Record<string, string[]> = {
  mathematiques: ['maths', 'math', 'mathematique', 'riyadiyat'],
  'sciences-naturelles': ['svt', 'sn', 'sciences-de-la-vie-et-de-la-terre', 'biologie', 'sciences-naturelle', 'ulum-tabiiya'],
  'education-islamique': ['instruction-islamique', 'instruction-religieuse', 'tarbiya-islamiya', 'islamique', 'islam'],
  arabe: ['langue-arabe', 'arabic', 'lugha-arabiya', 'al-arabiya'],
  francais: ['langue-francaise', 'french'],
  anglais: ['langue-anglaise', 'english'],
  histoire: ['history', 'tarikh'],
  geographie: ['geography', 'geo', 'jughrafiya'],
  'histoire-geographie': ['histoire-geo', 'hg'],
  physique: ['sciences-physiques', 'physics'],
  chimie: ['chemistry'],
  'physique-chimie': ['pc', 'physique-et-chimie'],
}

/** The key of this file (LEXICON, NAMES) that a catalogue's subject slug stands for, or null. */
export function subjectKey(slug: string): string | null {
  const s = slug.toLowerCase()
  if (s in NAMES) return s
  for (const [key, aliases] of Object.entries(SLUG_ALIASES)) if (aliases.includes(s)) return key
  return null
}

/**
 * The key of this file a subject as a portal writes it stands for: its slug or one of its other slugs
 * (SVT, SN, "Sciences naturelles" are sciences-naturelles), or one of the names a student gives it, in
 * French or Arabic, matched whole on folded words without the article ("التربية الإسلامية" is
 * education-islamique, "العلوم الطبيعية" sciences-naturelles). Null for anything else.
 */
export function catalogueSubject(subject: string): string | null {
  const words = normalizeWords(subject).split(' ').filter(Boolean)
  const key = subjectKey(words.join('-'))
  if (key) return key
  const name = words.map(bare).join(' ')
  if (name === '') return null
  for (const [k, names] of Object.entries(NAMES)) if (names.some((n) => normalizeWords(n).split(' ').map(bare).join(' ') === name)) return k
  return null
}

/** The words of a text folded for matching (text/fold.ts), joined by single spaces. */
export function normalizeWords(text: string): string {
  return foldedWords(text).join(' ')
}

const normalizedLexicon = Object.entries(LEXICON).map(([subject, { fr, ar }]) => ({
  subject,
  fr: fr.map(normalizeWords),
  ar: ar.map(normalizeWords),
}))

/** Matches per known subject in `text`. */
export function subjectScores(text: string): Map<string, number> {
  const norm = ` ${normalizeWords(text)} `
  const words = norm.trim().split(' ')
  const scores = new Map<string, number>()
  for (const { subject, fr, ar } of normalizedLexicon) {
    let score = 0
    for (const stem of fr) {
      if (stem.includes(' ')) score += norm.includes(` ${stem}`) ? 2 : 0
      else score += words.some((w) => w.startsWith(stem)) ? 1 : 0
    }
    // Arabic words carry prefixes (ال، و، ب، ل) and suffixes: a stem anywhere in a word counts
    for (const stem of ar) score += norm.includes(stem) ? 1 : 0
    if (score > 0) scores.set(subject, score)
  }
  return scores
}

/** A word without the article and the conjunction or preposition glued to it (وال، فال، بال، كال، لل). */
const bare = (word: string) => word.replace(/^[وفبكل]?ال(?=\p{L}{2})/u, '').replace(/^لل(?=\p{L}{2})/u, '')

/**
 * The subjects of `catalogue` (slugs) that the text names: a known subject's names (NAMES, through
 * subjectKey), another's slug as words, matched on folded words without the article.
 */
export function namedSubjects(text: string, catalogue: readonly string[]): string[] {
  const words = normalizeWords(text).split(' ').filter(Boolean).map(bare)
  const joined = ` ${words.join(' ')} `
  const named: string[] = []
  for (const slug of catalogue) {
    const key = subjectKey(slug)
    const names = (key ? NAMES[key]! : [slug.replaceAll('-', ' ')]).map((n) => normalizeWords(n).split(' ').map(bare).join(' '))
    if (names.some((n) => n.length >= 2 && joined.includes(` ${n} `))) named.push(slug)
  }
  return named
}

/** The one subject that matches best, or null when none matches or the best ones tie. */
export function inferSubject(text: string): string | null {
  const ranked = [...subjectScores(text)].sort((a, b) => b[1] - a[1])
  if (ranked.length === 0) return null
  if (ranked.length > 1 && ranked[1]![1] === ranked[0]![1]) return null
  return ranked[0]![0]
}

export const KNOWN_SUBJECTS = Object.keys(LEXICON)
