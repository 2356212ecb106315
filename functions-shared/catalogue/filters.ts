// A grade and a subject as a request names them, read as the catalogue stores them. Every way in stores
// them in one form (levelForm, canonicalSubject: a portal's "5ème AS" and "svt" are 5AS and
// sciences-naturelles), and requests are read in that form too; a request still names a stored value in
// another form when the catalogue holds documents stored before that form (a subject kept as a portal's
// slug, tarbiya-islamiya; a grade as 5-AS), or when the form itself has changed since. Each value is
// matched to the stored one that stands for it: itself, else the one of the same form.
import type { Deps } from '../deps.ts'
import { canonicalSubject, levelForm } from './namespace.ts'

/** The grades and subjects of the ready documents, with how many documents each pair has. */
export interface CataloguePlace {
  grade: string | null
  subject: string | null
  documents: number
}

export async function cataloguePlaces(deps: Deps): Promise<CataloguePlace[]> {
  // one read, not a transaction with a role (the catalogue is public)
  const rows = await deps.sql<CataloguePlace[]>`
    select grade, subject, count(*)::int as documents from public.documents where status = 'ready' group by grade, subject`
  return rows.map((r) => ({ grade: r.grade, subject: r.subject, documents: Number(r.documents) }))
}

/** The form two grades are one level in: levelForm, without case (a grade filter compares without case). */
export const gradeMatchKey = (grade: string): string => (levelForm(grade) ?? grade).toLowerCase()
/** The form two subjects are one subject in: canonicalSubject. */
export const subjectMatchKey = (subject: string): string => canonicalSubject(subject) ?? subject

/**
 * The stored value that stands for `wanted`: `wanted` itself when a document has it (a grade in any
 * case), else the stored value of the same key (gradeMatchKey, subjectMatchKey) that the most documents have;
 * `wanted` when none has.
 */
function storedValue(values: readonly { value: string; documents: number }[], wanted: string, key: (s: string) => string, caseless: boolean): string {
  const same = (a: string, b: string) => (caseless ? a.toLowerCase() === b.toLowerCase() : a === b)
  if (values.some((v) => same(v.value, wanted))) return wanted
  const k = key(wanted)
  let best: { value: string; documents: number } | undefined
  for (const v of values) if (key(v.value) === k && (best === undefined || v.documents > best.documents)) best = v
  return best?.value ?? wanted
}

/** What a request's grade and subject are in the catalogue (storedValue of each; absent ones stay absent). */
export function storedFilters(
  places: readonly CataloguePlace[],
  wanted: { grade: string | null; subject: string | null },
): { grade: string | null; subject: string | null } {
  const tally = (field: 'grade' | 'subject') => {
    const counts = new Map<string, number>()
    for (const p of places) if (p[field]) counts.set(p[field]!, (counts.get(p[field]!) ?? 0) + p.documents)
    return [...counts].map(([value, documents]) => ({ value, documents }))
  }
  return {
    grade: wanted.grade === null ? null : storedValue(tally('grade'), wanted.grade, gradeMatchKey, true),
    subject: wanted.subject === null ? null : storedValue(tally('subject'), wanted.subject, subjectMatchKey, false),
  }
}
