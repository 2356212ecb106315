// Ready documents with chunks and vectors (offline embeddings), written as the ingestion pipeline
// writes them, for retrieval and chat tests.
import type { Sql } from '../../functions-shared/db/client.ts'
import { offlineVector } from '../../functions-shared/ai/offline-embedder.ts'
import { namespaceFor } from '../../functions-shared/catalogue/namespace.ts'
import { AR_LESSON, FR_LESSON, PHYSICS_LESSON } from './portal.ts'
import { vectorLiteral as literalOf } from '../../functions-shared/lib/vector.ts'

export const vectorLiteral = (text: string) => literalOf(offlineVector(text, 1536))

export interface SeededDocument {
  id: string
  ingestionTs: string
  chunkIds: string[]
}

/** One ready document whose i-th text is chunk `${name}-${i}` (chunk_index i) on page i+1, or on page `pages[i]`. */
export async function seedDocument(
  sql: Sql,
  d: { name: string; grade: string; subject: string; language: string; texts: string[]; pages?: number[] },
): Promise<SeededDocument> {
  const namespace = namespaceFor(d.grade, d.subject)
  const [doc] = await sql`insert into public.documents (title, grade, subject, language, status, ingestion_ts, vectordb_namespace)
    values (${d.name}, ${d.grade}, ${d.subject}, ${d.language}, 'ready', now(), ${namespace}) returning id, ingestion_ts`
  const id = doc!.id as string
  const ts = new Date(doc!.ingestion_ts as Date).toISOString()
  const chunkIds: string[] = []
  for (const [i, text] of d.texts.entries()) {
    const chunk = `${d.name}-${i}`
    chunkIds.push(chunk)
    const page = d.pages?.[i] ?? i + 1
    await sql`insert into public.document_chunks (id, file_id, page_number, chunk_index, content) values (${chunk}, ${id}, ${page}, ${i}, ${text})`
    await sql`insert into public.vectors (index_name, namespace, id, file_id, embedding, metadata)
      values ('curriculum-1536', ${namespace}, ${chunk}, ${id}, ${vectorLiteral(text)}::extensions.vector,
              ${
      sql.json({
        chunk_id: chunk,
        file_id: id,
        language: d.language,
        grade: d.grade,
        subject: d.subject,
        source_url: `http://p.test/${d.name}.pdf`,
        page_number: page,
        ingestion_ts: ts,
      })
    })`
  }
  return { id, ingestionTs: ts, chunkIds }
}

/** What a re-ingest leaves behind: new chunk text and a new ingestion timestamp on the document and its vectors. */
export async function reingest(sql: Sql, documentId: string, texts: Map<string, string>, at: Date): Promise<string> {
  const ts = at.toISOString()
  for (const [chunk, text] of texts) await sql`update public.document_chunks set content = ${text} where id = ${chunk}`
  await sql`update public.documents set ingestion_ts = ${at} where id = ${documentId}`
  await sql`update public.vectors set metadata = jsonb_set(metadata, '{ingestion_ts}', to_jsonb(${ts}::text)) where file_id = ${documentId}`
  return ts
}

/** The chat tests' three lessons (maths 4AS in French, physics 5AS in French, Islamic education 4AS in Arabic), a sentence a page, by subject. */
export async function seedChatLessons(sql: Sql): Promise<Record<'mathematiques' | 'physique' | 'education-islamique', SeededDocument>> {
  const sentences = (text: string) => text.split(/(?<=\.) /)
  return {
    mathematiques: await seedDocument(sql, { name: 'Mathématiques 4AS', grade: '4AS', subject: 'mathematiques', language: 'fr', texts: sentences(FR_LESSON) }),
    physique: await seedDocument(sql, { name: 'Physique 5AS', grade: '5AS', subject: 'physique', language: 'fr', texts: sentences(PHYSICS_LESSON) }),
    'education-islamique': await seedDocument(sql, {
      name: 'Éducation islamique 4AS',
      grade: '4AS',
      subject: 'education-islamique',
      language: 'ar',
      texts: sentences(AR_LESSON),
    }),
  }
}
