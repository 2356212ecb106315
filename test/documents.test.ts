// Manual upload with a real multipart body, document edits and the five-step delete, dashboard stats.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createTestDatabase, type TestDatabase } from './helpers/db.ts'
import { createTestApp, json, type TestApp } from './helpers/app.ts'
import { bearer } from './helpers/tokens.ts'
import { makePdf } from '../scripts/lib/pdf.ts'
import { createUser } from './helpers/users.ts'
import { FR_LESSON, PHYSICS_LESSON } from './helpers/portal.ts'
import { apiKey } from '../functions-shared/lib/keys.ts'
import { LOCAL_JWT_SECRET } from '../functions-shared/config.ts'
import { reserve } from '../functions-shared/wallet/reservations.ts'

let db: TestDatabase
let t: TestApp
let service: Record<string, string>
let lesson: Uint8Array

beforeAll(async () => {
  db = await createTestDatabase()
  t = createTestApp({ sql: db.sql, env: { RATE_LIMIT_UPLOAD_PER_MINUTE: '1000', RATE_LIMIT_ADMIN_PER_MINUTE: '1000' } })
  service = bearer(await apiKey(LOCAL_JWT_SECRET, 'service_role'))
  lesson = await makePdf([`${FR_LESSON} ${FR_LESSON}`, PHYSICS_LESSON])
})
afterAll(async () => db?.close())

function form(fields: Record<string, string>, file?: { bytes: Uint8Array; name: string; type?: string }) {
  const f = new FormData()
  for (const [k, v] of Object.entries(fields)) f.set(k, v)
  if (file) f.set('file', new File([Buffer.from(file.bytes)], file.name, { type: file.type ?? 'application/pdf' }))
  return f
}
const upload = async (body: FormData, app = t) => {
  const res = await app.request('/admin/upload-curriculum', { method: 'POST', headers: service, body })
  return { status: res.status, body: await json(res) }
}

/** A multipart body written by hand, for what FormData never writes: the boundary chosen, a part without a filename. */
function multipart(boundary: string, parts: { name: string; filename?: string; type?: string; body: Uint8Array | string }[]): Uint8Array {
  const chunks: Uint8Array[] = []
  for (const p of parts) {
    const disposition = `form-data; name="${p.name}"${p.filename === undefined ? '' : `; filename="${p.filename}"`}`
    chunks.push(Buffer.from(`--${boundary}\r\nContent-Disposition: ${disposition}\r\n${p.type ? `Content-Type: ${p.type}\r\n` : ''}\r\n`))
    chunks.push(typeof p.body === 'string' ? Buffer.from(p.body) : p.body)
    chunks.push(Buffer.from('\r\n'))
  }
  chunks.push(Buffer.from(`--${boundary}--\r\n`))
  return Buffer.concat(chunks)
}
const uploadRaw = async (contentType: string, body: Uint8Array) => {
  const res = await t.request('/admin/upload-curriculum', { method: 'POST', headers: { ...service, 'content-type': contentType }, body: Buffer.from(body) })
  return { status: res.status, body: await json(res), requestId: res.headers.get('x-request-id') }
}

describe('POST /admin/upload-curriculum', () => {
  it('turns a PDF into a ready document with 1000/150 character chunks and the text in vector metadata', async () => {
    const res = await upload(
      form({ grade: '4AS', subject: 'Mathématiques', language: 'fr', pdf_source: 'https://portal.example.mr/maths.pdf' }, { bytes: lesson, name: 'lecon.pdf' }),
    )
    expect(res.status, JSON.stringify(res.body)).toBe(201)
    expect(res.body).toMatchObject({ status: 'ready', namespace: 'grade-4as-mathematiques', pages: 2, content_pages: 2 })
    expect(res.body.chunks).toBeGreaterThanOrEqual(3)
    const chunks = await db.sql`select content from public.document_chunks where file_id = ${res.body.document_id} order by page_number, chunk_index`
    expect(chunks.every((c) => Array.from(c.content as string).length <= 1000)).toBe(true)
    const [v] = await db.sql`select metadata from public.vectors where file_id = ${res.body.document_id} order by id limit 1`
    expect(v!.metadata).toMatchObject({ text: expect.any(String), source_url: 'https://portal.example.mr/maths.pdf', grade: '4AS', language: 'fr' })
    const [doc] = await db.sql`select status, origin, title from public.documents where id = ${res.body.document_id}`
    expect(doc).toEqual({ status: 'ready', origin: 'upload', title: null })
  })

  it('leaves a running head and page numbers on the first page only', async () => {
    const head = "Ministère de l'Éducation nationale - Physique 7C"
    const bodies = [FR_LESSON, PHYSICS_LESSON, `${FR_LESSON} ${PHYSICS_LESSON}`]
    const pdf = await makePdf(bodies.map((b, i) => `${head}\n${b}\nPage ${i + 1} sur 3`))
    const res = await upload(form({ grade: '7C', subject: 'physique', language: 'fr' }, { bytes: pdf, name: 'tete.pdf' }))
    expect(res.status, JSON.stringify(res.body)).toBe(201)
    const pages = await db.sql<{ page_number: number; content: string }[]>`
      select page_number, string_agg(content, ' ' order by chunk_index) as content from public.document_chunks
       where file_id = ${res.body.document_id} group by page_number order by page_number`
    expect(pages.map((p) => p.page_number)).toEqual([1, 2, 3])
    expect(pages[0]!.content).toContain(head)
    expect(pages[0]!.content).toContain('Page 1 sur 3')
    for (const p of pages.slice(1)) {
      expect(p.content).not.toContain(head)
      expect(p.content).not.toMatch(/Page \d sur 3/)
    }
    expect(pages[1]!.content).toContain(PHYSICS_LESSON.slice(0, 40))
  })

  it('puts back whole the words a typesetter broke at a line end, and keeps the hyphen of a compound', async () => {
    const pdf = await makePdf([
      `Les équa-\ntions horaires d'un mobile donnent sa posi-\ntion à chaque instant, c'est-à-\ndire l'état de son mouvement. Comment détermine-t-\non sa vitesse ? ${PHYSICS_LESSON}`,
    ])
    const res = await upload(form({ grade: '7C', subject: 'physique', language: 'fr' }, { bytes: pdf, name: 'coupures.pdf' }))
    expect(res.status, JSON.stringify(res.body)).toBe(201)
    const [page] = await db.sql<
      { content: string }[]
    >`select string_agg(content, ' ' order by chunk_index) as content from public.document_chunks where file_id = ${res.body.document_id}`
    expect(page!.content).toContain(
      "Les équations horaires d'un mobile donnent sa position à chaque instant, c'est-à-dire l'état de son mouvement. Comment détermine-t-on sa vitesse ?",
    )
    // and the search finds the whole word
    const [hit] = await db
      .sql`select bool_or(pg_catalog.tsvector_to_array(private.search_vector('position')) <@ pg_catalog.tsvector_to_array(search_tsv)) as found from public.document_chunks where file_id = ${res.body.document_id}`
    expect(hit!.found).toBe(true)
  })

  it('refuses a file that is not a PDF (415), missing fields (400) and an oversized body (413)', async () => {
    const html = new TextEncoder().encode('<html>not a pdf</html>')
    expect((await upload(form({ grade: '4AS', subject: 'maths', language: 'fr' }, { bytes: html, name: 'x.pdf' }))).status).toBe(415)
    const missing = await upload(form({ subject: 'maths', language: 'fr' }, { bytes: lesson, name: 'x.pdf' }))
    expect(missing.status).toBe(400)
    expect(missing.body.fields.map((f: { field: string }) => f.field)).toContain('grade')
    expect((await upload(form({ grade: '4AS', subject: 'maths', language: 'latin' }, { bytes: lesson, name: 'x.pdf' }))).status).toBe(400)
    expect((await upload(form({ grade: '4AS', subject: 'maths', language: 'fr' }))).status).toBe(400)
    const small = createTestApp({ sql: db.sql, env: { UPLOAD_MAX_BYTES: String(lesson.byteLength - 1) } })
    expect((await upload(form({ grade: '4AS', subject: 'maths', language: 'fr' }, { bytes: lesson, name: 'x.pdf' }), small)).status).toBe(413)
  })

  it('refuses a file part without a filename with a 400 that names the part and says its filename is missing', async () => {
    const count = async () => Number((await db.sql`select count(*) from public.documents`)[0]!.count)
    const before = await count()
    // the PDF's bytes hold NULs: read as a text field, they were refused as text the database cannot store
    expect(lesson.includes(0)).toBe(true)
    const res = await uploadRaw(
      'multipart/form-data; boundary=x-boundary',
      multipart('x-boundary', [
        { name: 'grade', body: '4AS' },
        { name: 'subject', body: 'maths' },
        { name: 'language', body: 'fr' },
        { name: 'file', type: 'application/pdf', body: lesson },
      ]),
    )
    expect(res.status, JSON.stringify(res.body)).toBe(400)
    expect(res.body).toMatchObject({ error: 'validation_failed', request_id: res.requestId })
    expect(res.body.fields).toEqual([{ field: 'file', message: expect.stringContaining('no filename') }])
    expect(res.body.message).toMatch(/file.*no filename/)
    expect(res.body.message).not.toMatch(/NUL/i)
    expect(await count()).toBe(before)
  })

  it('reads a body whatever boundary RFC 2046 allows: quoted, holding a space, beside other parameters', async () => {
    const fields = (boundary: string, withFile = true) =>
      multipart(boundary, [
        { name: 'grade', body: '4AS' },
        { name: 'subject', body: 'maths' },
        { name: 'language', body: 'fr' },
        ...(withFile ? [{ name: 'file', filename: 'lecon.pdf', type: 'application/pdf', body: lesson }] : []),
      ])
    const spaced = await uploadRaw('multipart/form-data; boundary="a b"', fields('a b'))
    expect(spaced.status, JSON.stringify(spaced.body)).toBe(201)
    expect(spaced.body).toMatchObject({ status: 'ready', namespace: 'grade-4as-mathematiques' })
    // every character a boundary may hold, its parameter after another and in another case: read (the
    // missing file proves it), not refused as a type the route does not take
    const odd = "'()+_,-./:=? x"
    const other = await uploadRaw(`Multipart/Form-Data; charset=UTF-8;  BOUNDARY="${odd}"`, fields(odd, false))
    expect(other.status, JSON.stringify(other.body)).toBe(400)
    expect(other.body.fields.map((f: { field: string }) => f.field)).toEqual(['file'])
    // a boundary RFC 2046 does not allow (past 70 characters, ending in a space), or none, is a 400
    for (
      const type of [
        `multipart/form-data; boundary="${'b'.repeat(71)}"`,
        'multipart/form-data; boundary="a "',
        'multipart/form-data',
        'multipart/form-data; boundary="a b',
      ]
    ) {
      const res = await uploadRaw(type, fields('a b'))
      expect(res.status, `${type}: ${JSON.stringify(res.body)}`).toBe(400)
      expect(res.body, type).toMatchObject({ error: 'bad_request', message: expect.stringContaining('boundary'), request_id: res.requestId })
    }
    // a body that does not follow the boundary it declares
    const broken = await uploadRaw('multipart/form-data; boundary="a b"', fields('other'))
    expect(broken.status, JSON.stringify(broken.body)).toBe(400)
    expect(broken.body).toMatchObject({ error: 'bad_request', request_id: broken.requestId })
  })

  it('refuses, storing nothing, a namespace other than grade-{grade}-{subject}, a grade or subject no question can name, and a pdf_source that is not http(s)', async () => {
    const count = async () => Number((await db.sql`select count(*) from public.documents`)[0]!.count)
    const before = await count()
    for (
      const [fields, field] of [
        [{ grade: '7C', subject: 'physique', language: 'fr', namespace: 'custom-ns' }, 'namespace'],
        [{ grade: '7C', subject: 'physique', language: 'fr', namespace: 'grade-7c-chimie' }, 'namespace'],
        [{ grade: '!!!', subject: 'physique', language: 'fr' }, 'grade'],
        // longer than the 32 characters a question's grade may have
        [{ grade: 'seconde annee du secondaire serie C', subject: 'physique', language: 'fr' }, 'grade'],
        // a subject in Arabic script that names none the catalogue knows (التربية الإسلامية is education-islamique)
        [{ grade: '7C', subject: 'مادة جديدة', language: 'ar' }, 'subject'],
        [{ grade: '7C', subject: 'physique', language: 'fr', pdf_source: 'javascript:alert(document.cookie)//' }, 'pdf_source'],
        [{ grade: '7C', subject: 'physique', language: 'fr', pdf_source: 'data:text/html,<script>alert(1)</script>' }, 'pdf_source'],
      ] as const
    ) {
      const res = await upload(form(fields, { bytes: lesson, name: 'x.pdf' }))
      expect(res.status, JSON.stringify(res.body)).toBe(400)
      expect(res.body).toMatchObject({ error: 'validation_failed', request_id: expect.any(String) })
      expect(res.body.fields.map((f: { field: string }) => f.field)).toEqual([field])
    }
    expect(await count()).toBe(before)
    // the namespace the grade and subject make is accepted, in any case
    expect(
      (await upload(
        form({ grade: '7C', subject: 'physique', language: 'fr', namespace: 'Grade-7C-Physique', pdf_source: 'https://portal.example.mr/p.pdf' }, {
          bytes: lesson,
          name: 'x.pdf',
        }),
      )).body.namespace,
    ).toBe('grade-7c-physique')
  })
})

describe('documents', () => {
  it('PATCH changes only title, major, weight and category', async () => {
    const up = await upload(form({ grade: '5AS', subject: 'physique', language: 'fr' }, { bytes: lesson, name: 'p.pdf' }))
    const res = await t.request(`/admin/documents/${up.body.document_id}`, {
      method: 'PATCH',
      headers: { ...service, 'content-type': 'application/json' },
      body: JSON.stringify({ title: 'Physique 5AS', weight: 3 }),
    })
    expect(await json(res)).toMatchObject({ title: 'Physique 5AS', weight: 3, major: null, grade: '5AS' })
    const bad = await t.request(`/admin/documents/${up.body.document_id}`, {
      method: 'PATCH',
      headers: { ...service, 'content-type': 'application/json' },
      body: JSON.stringify({ status: 'failed' }),
    })
    expect(bad.status).toBe(400)
    expect(
      (await t.request(`/admin/documents/${crypto.randomUUID()}`, { method: 'PATCH', headers: { ...service, 'content-type': 'application/json' }, body: '{}' }))
        .status,
    ).toBe(404)
  })

  it('DELETE removes vectors, chunks and the row, and sets the linked reference back to discovered', async () => {
    const up = await upload(form({ grade: '6AS', subject: 'histoire', language: 'fr' }, { bytes: lesson, name: 'h.pdf' }))
    const [ref] = await db
      .sql`insert into public.curriculum_references (source, pdf_source, source_url, status) values ('t', 'http://p.test/h.pdf', 'http://p.test/h.pdf', 'ready') returning id`
    await db.sql`update public.documents set reference_id = ${ref!.id} where id = ${up.body.document_id}`
    const res = await t.request(`/admin/documents/${up.body.document_id}`, { method: 'DELETE', headers: service })
    expect(await json(res)).toEqual({ status: 'deleted', chunks_removed: up.body.chunks, vectors_removed: up.body.vectors })
    const [left] = await db.sql`select (select count(*)::int from public.vectors where file_id = ${up.body.document_id}) as v,
      (select count(*)::int from public.document_chunks where file_id = ${up.body.document_id}) as c,
      (select count(*)::int from public.documents where id = ${up.body.document_id}) as d,
      (select status from public.curriculum_references where id = ${ref!.id}) as ref_status`
    expect(left).toEqual({ v: 0, c: 0, d: 0, ref_status: 'discovered' })
    expect((await t.request(`/admin/documents/${up.body.document_id}`, { method: 'DELETE', headers: service })).status).toBe(404)
  })
})

describe('GET /admin/stats', () => {
  it('counts what is in the database', async () => {
    const [admin, student] = [await createUser(db.sql, { role: 'admin' }), await createUser(db.sql)]
    await reserve({ ctx: { deps: t.deps, requestId: 'stats' }, input: { user_id: student.id, estimate: 20 } })
    void admin
    const [expected] = await db
      .sql`select (select count(*)::int from public.documents) as documents, (select count(*)::int from public.document_chunks) as chunks`
    const res = await t.request('/admin/stats', { headers: service })
    const body = await json(res)
    expect(body).toEqual({
      documents: { total: expected!.documents, ready: expected!.documents, processing: 0, failed: 0 },
      chunks: { total: expected!.chunks },
      references: { total: 1, discovered: 1, ready: 0, failed: 0 },
      users: { total: 2, admins: 1, students: 1 },
      jobs: { queued: 0, running: 0, completed: 0, failed: 0 },
      wallet: { total_tokens_in_circulation: 50 },
    })
  })
})

// after the statistics, which count the users this one makes
describe('an uploaded document, for students', () => {
  it('stores the grade and subject as questions name them, so a student who names them, or picks the textbook, finds it', async () => {
    // "6 C" is the level 6C, and "Sciences Physiques" the catalogue's physique (canonicalSubject)
    const res = await upload(form({ grade: '6 C', subject: 'Sciences Physiques', language: 'fr' }, { bytes: lesson, name: 'sp.pdf' }))
    expect(res.status, JSON.stringify(res.body)).toBe(201)
    expect(res.body.namespace).toBe('grade-6c-physique')
    const [doc] = await db.sql`select grade, subject from public.documents where id = ${res.body.document_id}`
    expect(doc).toEqual({ grade: '6C', subject: 'physique' })
    const [v] = await db
      .sql`select namespace, metadata->>'grade' as grade, metadata->>'subject' as subject from public.vectors where file_id = ${res.body.document_id} limit 1`
    expect(v).toEqual({ namespace: 'grade-6c-physique', grade: '6C', subject: 'physique' })
    expect((await json(await t.request('/curriculum/subjects'))).subjects).toContain('physique')
    const student = await createUser(db.sql)
    const ask = async (body: Record<string, unknown>) => {
      const r = await t.request('/chat', {
        method: 'POST',
        headers: { ...bearer(student.token), 'content-type': 'application/json' },
        body: JSON.stringify({ stream: false, message: 'la célérité des ondes mécaniques', ...body }),
      })
      return json(r)
    }
    // named as stored, as the upload named them, or another way of writing them
    for (
      const named of [
        { grade: '6C', subject: 'physique' },
        { grade: '6-C', subject: 'sciences-physiques' },
        { grade: '6eme-C', subject: 'Sciences Physiques' },
        { textbook_id: res.body.document_id },
      ]
    ) {
      const answer = await ask(named)
      expect(answer.outcome, JSON.stringify(named)).toBe('answered')
      expect(answer.sources.length).toBeGreaterThan(0)
      expect(answer.sources.every((x: { document_id: string }) => x.document_id === res.body.document_id)).toBe(true)
    }
  })
})
