// The public catalogue's reads (spec §4.9): the subjects, levels and textbooks of the ready documents,
// a grade and a subject read as the chat reads them (catalogue/filters.ts).
import type { ServiceContext } from '../deps.ts'
import { gradeMatchKey, subjectMatchKey } from '../catalogue/filters.ts'
import { asService } from '../db/tx.ts'
import { DomainError } from '../domain/errors.ts'
import type { DocumentRow } from '../ingestion/documents.ts'

/** A ready document as the catalogue shows it. */
export interface Textbook {
  id: string
  title: string
  grade: string
  subject: string
  major: string
  language: string
  weight: number
  page_count: number
  chunk_count: number
  namespace: string
}

function textbookOf(r: DocumentRow): Textbook {
  return {
    id: r.id,
    title: r.title ?? '',
    grade: r.grade ?? '',
    subject: r.subject ?? '',
    major: r.major ?? '',
    language: r.language ?? '',
    weight: r.weight,
    page_count: r.page_count ?? 0,
    chunk_count: r.chunk_count ?? 0,
    namespace: r.vectordb_namespace ?? '',
  }
}

/** The first and last page of a document's chunks; both null when it has none. */
interface PageRangeRow {
  min: number | null
  max: number | null
}

export async function listSubjects({ ctx }: { ctx: ServiceContext }) {
  const rows = await asService(
    ctx.deps.sql,
    (tx) =>
      tx<
        { subject: string }[]
      >`select distinct subject from public.documents where status = 'ready' and subject is not null and subject <> '' order by subject`,
  )
  return { subjects: rows.map((r) => r.subject), total: rows.length }
}

export async function listTextbooks(
  { ctx, input }: { ctx: ServiceContext; input: { grade?: string | undefined; subject?: string | undefined; language?: string | undefined } },
) {
  // "5ème AS" is the level 5AS, "Mathématiques" and "Maths" are mathematiques, whichever form a document was stored in
  const grade = input.grade === undefined ? null : gradeMatchKey(input.grade)
  const subject = input.subject === undefined ? null : subjectMatchKey(input.subject)
  const language = input.language ?? null
  const ready = await asService(ctx.deps.sql, (tx) =>
    tx<DocumentRow[]>`
    select * from public.documents
     where status = 'ready' and (${language}::text is null or language = ${language})
     order by grade, subject, weight desc, title`)
  const rows = ready.filter((r) =>
    (grade === null || (r.grade !== null && gradeMatchKey(r.grade) === grade)) &&
    (subject === null || (r.subject !== null && subjectMatchKey(r.subject) === subject))
  )
  const levels = [...new Set(rows.map((r) => r.grade).filter((g): g is string => !!g))].sort()
  return { levels, textbooks: rows.map(textbookOf) }
}

export async function getTextbook({ ctx, input }: { ctx: ServiceContext; input: { id: string } }) {
  const result = await asService(ctx.deps.sql, async (tx) => {
    const [doc] = await tx<DocumentRow[]>`select * from public.documents where id = ${input.id} and status = 'ready'`
    if (!doc) return null
    const [range] = await tx<
      [PageRangeRow]
    >`select min(page_number)::int as min, max(page_number)::int as max from public.document_chunks where file_id = ${input.id}`
    return { document: textbookOf(doc), page_range: { min: range.min, max: range.max } }
  })
  if (!result) throw new DomainError('not_found', `No ready textbook ${input.id}`)
  return result
}
