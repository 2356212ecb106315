// A reference's namespace (spec §2.2): the grade and subject of its vectors, as chat filters on them.
// Kept apart from the pipeline so that the chat function loads no PDF code.
import { catalogueSubject } from '../text/subjects.ts'

/** A grade or subject as a namespace writes it: accents off, lower case, runs of anything else one dash. */
export function namespaceSlug(s: string): string {
  return s.normalize('NFKD').replace(/[\u0300-\u036f]/g, '').toLowerCase().replace(/[^\p{L}\p{N}]+/gu, '-').replace(/^-|-$/g, '')
}

/** The namespace of spec §2.2: grade-{grade}-{subject}, in lower-case slug form. */
export function namespaceFor(grade: string, subject: string): string {
  return `grade-${namespaceSlug(grade)}-${namespaceSlug(subject)}`
}

/**
 * Whether a reference's grade and subject make a namespace: both set, and both with a letter or digit
 * (a value of punctuation alone would make `grade--x`, which no question ever filters on).
 */
export function hasNamespace(grade: unknown, subject: unknown): boolean {
  return typeof grade === 'string' && typeof subject === 'string' && namespaceSlug(grade) !== '' && namespaceSlug(subject) !== ''
}

/**
 * A grade and a subject as a question filters on them (chat reads its grade and subject the same way,
 * levelForm and canonicalSubject): `6 C` → `6C`, `5ème AS` → `5AS`, `Sciences Physiques` → `physique`,
 * `SVT` → `sciences-naturelles`. Null when nothing of the value is left in that form (a value in Arabic script or
 * of punctuation alone), which no question can name.
 */
/** The longest grade a reference, an upload or a question may name (chat's filter and the catalogue's forms agree). */
export const MAX_GRADE_CHARS = 32

export function filterForms(grade: string, subject: string): { grade: string | null; subject: string | null } {
  return { grade: levelForm(grade), subject: canonicalSubject(subject) }
}

/**
 * A subject in the one form the catalogue stores and every filter compares: the subject the catalogue
 * knows by that slug or name (SVT, SN, "Sciences naturelles", العلوم الطبيعية are sciences-naturelles;
 * tarbiya-islamiya and التربية الإسلامية education-islamique: catalogueSubject), else its slug
 * (subjectForm), else null. Applied alike to what a portal lists, an upload or an operator gives, and
 * what a question or a catalogue query names, so that each finds the other whichever of its names it
 * uses.
 */
export function canonicalSubject(subject: string): string | null {
  return catalogueSubject(subject) ?? subjectForm(subject)
}

/** A grade as a question names it (filterForms), or null. */
export function gradeForm(grade: string): string | null {
  // Arabic-Indic and Persian digits are digits ("٥ AS" is 5 AS; they were dropped, leaving "AS")
  const g = foldDigits(grade).normalize('NFKD').replace(/[\u0300-\u036f]/g, '').replace(/[^A-Za-z0-9]+/g, '-').replace(/^-+|-+$/g, '')
  return g !== '' && g.length <= MAX_GRADE_CHARS ? g : null
}

/** A subject as a question names it, a lower-case slug in Latin letters (filterForms), or null. */
export function subjectForm(subject: string): string | null {
  const s = namespaceSlug(subject)
  return /^[a-z0-9]+(?:-[a-z0-9]+)*$/.test(s) ? s : null
}

/** Arabic-Indic (U+0660–U+0669) and extended Arabic-Indic (U+06F0–U+06F9) digits as ASCII digits. */
export function foldDigits(s: string): string {
  return s.replace(/[\u0660-\u0669\u06f0-\u06f9]/g, (d) => String((d.codePointAt(0)! & 0xf) % 10))
}

// the ordinal suffixes a level's number is written with: 5e, 5ème, 5ieme, 1er, 1ère, 1re, 2nd, 2nde
const ORDINAL = '(?:ieme|eme|ere|er|re|nde|nd|e)'
const LEVEL = new RegExp(`^(\\d{1,2})(?:-?${ORDINAL})?-?([A-Za-z]{1,3})$`, 'i')
const ORDINAL_ONLY = new RegExp(`^${ORDINAL}$`, 'i')

/**
 * A grade as a listing gives it, in the one form a level has in the catalogue: its number and its series
 * joined, the series in capitals, an ordinal suffix dropped ("5ème AS", "5e AS", "5 AS", "5-as", "٥ AS" are
 * 5AS; "7ème C" is 7C), as the curriculum writes its levels (4AS, 7C) and a question names them. A portal
 * writes one level several ways, and each way was a level of its own: a question naming 5AS found none
 * of the lessons stored as 5-AS or 5eme-AS. Anything else is gradeForm's form; null as gradeForm.
 */
export function levelForm(grade: string): string | null {
  const g = gradeForm(grade)
  const m = g === null ? null : LEVEL.exec(g)
  if (!m || ORDINAL_ONLY.test(m[2]!)) return g
  return `${Number(m[1])}${m[2]!.toUpperCase()}`
}
