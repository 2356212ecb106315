// /rest/v1 against PostgREST's documented behaviour, through the real supabase-js client: embedding over
// foreign keys (with RLS on every table touched), logic trees, the operators, aliases, casts and JSON
// paths, functions with select= and filters on their rows, GET and HEAD calls, Prefer (tx, max-affected,
// count, resolution, missing, handling) and the media types. Each case is what a hosted project answers.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type PostgrestFixture, startPostgrestFixture } from './helpers/postgrest-fixture.ts'

let f: PostgrestFixture

beforeAll(async () => {
  f = await startPostgrestFixture()
})
afterAll(async () => f?.close())

describe('embedding over foreign keys', () => {
  it("reads many-to-one as an object, one-to-many as an array, nested two levels, under every table's policies", async () => {
    const books = await f.reader().from('pt_books').select('title, author:pt_authors!author_id(name), editor:pt_authors!editor_id(name)').order('id')
    expect(books).toMatchObject({
      error: null,
      data: [
        { title: 'Les dunes', author: { name: 'Mariem' }, editor: { name: 'Ahmedou' } },
        { title: 'La mer', author: { name: 'Mariem' }, editor: null },
        { title: 'Le fleuve', author: { name: 'Ahmedou' }, editor: { name: 'Mariem' } },
      ],
    })
    const nested = await f.reader().from('pt_authors').select('name, pt_books!author_id(title, pt_chapters(title))').eq('id', 1).single()
    // the draft chapter is hidden by pt_chapters' policy, in an embed as in a read of its own
    expect(nested.data).toEqual({
      name: 'Mariem',
      pt_books: [{ title: 'Les dunes', pt_chapters: [{ title: 'Aube' }, { title: 'Nuit' }] }, { title: 'La mer', pt_chapters: [] }],
    })
    const all = await f.service().from('pt_chapters').select('title').eq('book_id', 10)
    expect(all.data).toHaveLength(3)
  })

  it('asks for a hint when two keys link the same tables (300 PGRST201), and says when none does (PGRST200)', async () => {
    const ambiguous = await f.reader().from('pt_books').select('title, pt_authors(name)')
    expect(ambiguous.status).toBe(300)
    expect(ambiguous.error).toMatchObject({
      code: 'PGRST201',
      message: "Could not embed because more than one relationship was found for 'pt_books' and 'pt_authors'",
    })
    expect(ambiguous.error!.hint).toContain("'pt_authors!pt_books_author_id_fkey'")
    const none = await f.reader().from('pt_chapters').select('title, pt_authors(name)')
    expect(none).toMatchObject({ status: 400, error: { code: 'PGRST200' } })
  })

  it('filters, orders and limits an embedded resource, and !inner keeps only the rows whose embed is not empty', async () => {
    const ordered = await f.reader().from('pt_authors').select('name, pt_books!author_id(title)').eq('id', 1)
      .order('title', { referencedTable: 'pt_books', ascending: true }).limit(1, { referencedTable: 'pt_books' }).single()
    expect(ordered.data).toEqual({ name: 'Mariem', pt_books: [{ title: 'La mer' }] })
    const filtered = await f.reader().from('pt_authors').select('name, pt_books!author_id(title)').eq('pt_books.title', 'Le fleuve').order('id')
    expect(filtered.data).toEqual([{ name: 'Mariem', pt_books: [] }, { name: 'Ahmedou', pt_books: [{ title: 'Le fleuve' }] }, {
      name: 'Khadija',
      pt_books: [],
    }])
    const inner = await f.reader().from('pt_authors').select('name, pt_books!author_id!inner(title)').eq('pt_books.title', 'Le fleuve')
    expect(inner.data).toEqual([{ name: 'Ahmedou', pt_books: [{ title: 'Le fleuve' }] }])
    const withBooks = await f.reader().from('pt_authors').select('name, pt_books!author_id(id)').not('pt_books', 'is', null).order('id')
    expect(withBooks.data!.map((a) => a.name)).toEqual(['Mariem', 'Ahmedou'])
    const notSelected = await f.reader().from('pt_authors').select('name').eq('pt_books.title', 'x')
    expect(notSelected).toMatchObject({ status: 400, error: { code: 'PGRST108', message: "'pt_books' is not an embedded resource in this request" } })
  })
})

describe('filters', () => {
  const names = async (q: PromiseLike<{ data: { name: string }[] | null; error: unknown }>) => {
    const { data, error } = await q
    expect(error).toBeNull()
    return data!.map((r) => r.name)
  }
  it('reads or/and/not trees, nested and negated, and on embedded resources', async () => {
    const base = () => f.reader().from('pt_authors').select('name').order('id')
    expect(await names(base().or('name.eq.Mariem,and(id.gt.1,rank.lt.3)'))).toEqual(['Mariem', 'Ahmedou'])
    expect(await names(base().not('name', 'eq', 'Mariem'))).toEqual(['Ahmedou', 'Khadija'])
    expect(await names(base().not('name', 'in', '(Mariem,Khadija)'))).toEqual(['Ahmedou'])
    expect(await names(base().or('id.in.(1,3),name.like.*dou'))).toEqual(['Mariem', 'Ahmedou', 'Khadija'])
    const r = await f.raw('pt_authors?select=name&not.or=(id.eq.1,id.eq.2)')
    expect(await r.json()).toEqual([{ name: 'Khadija' }])
    const embedded = await f.reader().from('pt_authors').select('name, pt_books!author_id(title)').or('title.eq.La mer,title.eq.Le fleuve', {
      referencedTable: 'pt_books',
    }).order('id')
    expect(embedded.data![0]).toEqual({ name: 'Mariem', pt_books: [{ title: 'La mer' }] })
  })

  it('has the array, range, pattern, distinctness and full-text operators', async () => {
    const base = () => f.reader().from('pt_authors').select('name').order('id')
    expect(await names(base().contains('tags', ['conte']))).toEqual(['Mariem', 'Khadija'])
    expect(await names(base().containedBy('tags', ['roman', 'essai', 'conte']))).toEqual(['Ahmedou', 'Khadija'])
    expect(await names(base().overlaps('tags', ['roman', 'essai']))).toEqual(['Ahmedou', 'Khadija'])
    expect(await names(base().contains('meta', { city: 'Atar' }))).toEqual(['Ahmedou'])
    expect(await names(base().match({ rank: 2 }))).toEqual(['Ahmedou'])
    expect(await names(base().filter('name', 'imatch', '^kh'))).toEqual(['Khadija'])
    expect(await names(base().filter('born', 'isdistinct', '1990-05-01'))).toEqual(['Ahmedou', 'Khadija'])
    expect(await names(base().filter('name', 'like(any)', '{M*,*ija}'))).toEqual(['Mariem', 'Khadija'])
    const books = () => f.reader().from('pt_books').select('title').order('id')
    const titles = async (q: PromiseLike<{ data: { title: string }[] | null; error: unknown }>) => (await q).data!.map((b) => b.title)
    expect(await titles(books().overlaps('pages', '[90,110)'))).toEqual(['Les dunes', 'Le fleuve'])
    expect(await titles(books().rangeLt('pages', '[150,200)'))).toEqual(['Les dunes', 'La mer'])
    expect(await titles(books().rangeAdjacent('pages', '[80,90)'))).toEqual(['La mer'])
    expect(await titles(books().textSearch('summary', 'dunes & vent', { config: 'french' }))).toEqual(['Les dunes'])
    expect(await titles(books().textSearch('summary', 'pêcheurs port', { type: 'plain', config: 'french' }))).toEqual(['La mer'])
    expect(await titles(books().textSearch('summary', 'fleuve Sénégal', { type: 'phrase', config: 'french' }))).toEqual(['Le fleuve'])
    expect(await titles(books().textSearch('summary', '"la mer" or fleuve', { type: 'websearch', config: 'french' }))).toEqual(['La mer', 'Le fleuve'])
  })

  it('reads aliases, casts and JSON paths in select, filters and order', async () => {
    const rows = await f.reader().from('pt_authors').select('label:name, id::text, city:meta->>city, meta->zip').not('meta', 'is', null).order('meta->>city')
    expect(rows.data).toEqual([{ label: 'Ahmedou', id: '2', city: 'Atar', zip: null }, { label: 'Mariem', id: '1', city: 'Nouakchott', zip: '01' }])
    expect((await f.reader().from('pt_authors').select('name').eq('meta->>city', 'Atar')).data).toEqual([{ name: 'Ahmedou' }])
    const unknown = await f.reader().from('pt_authors').select('name').filter('name', 'near', 'x')
    expect(unknown).toMatchObject({ status: 400, error: { code: 'PGRST100' } })
  })
})

describe('functions', () => {
  it('calls by POST, GET and HEAD, with select=, filters and order on the rows a function returns', async () => {
    expect(await f.reader().rpc('pt_add', { a: 2, b: 3 })).toMatchObject({ status: 200, data: 5 })
    expect(await f.reader().rpc('pt_add', { a: 2, b: 3 }, { get: true })).toMatchObject({ status: 200, data: 5 })
    const rows = await f.reader().rpc('pt_books_of', { p_author: 1 }).select('title').neq('title', 'La mer').order('title')
    expect(rows).toMatchObject({ status: 200, data: [{ title: 'Les dunes' }] })
    const embedded = await f.reader().rpc('pt_books_of', { p_author: 1 }, { get: true }).select('title, pt_chapters(title)').eq('id', 10).single()
    expect(embedded.data).toEqual({ title: 'Les dunes', pt_chapters: [{ title: 'Aube' }, { title: 'Nuit' }] })
    const head = await f.reader().rpc('pt_books_of', { p_author: 1 }, { head: true, count: 'exact' })
    expect(head).toMatchObject({ status: 200, count: 2, data: null })
    expect(await f.reader().rpc('pt_nothing')).toMatchObject({ status: 204, error: null })
  })

  it('types jsonb and composite arguments, tells overloads apart or says it cannot (300 PGRST203)', async () => {
    expect((await f.reader().rpc('pt_echo', { j: { a: 1 } })).data).toBe('object')
    expect((await f.reader().rpc('pt_echo', { j: 'texte' })).data).toBe('string')
    expect((await f.reader().rpc('pt_echo', { j: [1, 2] })).data).toBe('array')
    expect((await f.reader().rpc('pt_norm', { p: { x: -3, y: 4 } })).data).toBe(7)
    const over = await f.reader().rpc('pt_over', { a: 1 })
    expect(over.status).toBe(300)
    expect(over.error).toMatchObject({
      code: 'PGRST203',
      message: expect.stringContaining('Could not choose the best candidate function between: public.pt_over(a => integer), public.pt_over(a => text)'),
    })
    expect(await f.reader().rpc('pt_nope', { a: 1 })).toMatchObject({ status: 404, error: { code: 'PGRST202' } })
  })

  it('calls a function by GET in a read-only transaction: one that writes is refused and writes nothing', async () => {
    const res = await f.reader().rpc('pt_rename', { p_id: 3, p_name: 'Khadijetou' }, { get: true })
    expect(res.status).toBe(405)
    expect(res.error).toMatchObject({ code: '25006' })
    expect(await f.db.sql`select name from public.pt_authors where id = 3`).toEqual([{ name: 'Khadija' }])
  })
})

describe('Prefer and media types', () => {
  it('rolls back with tx=rollback, answering as if committed', async () => {
    const res = await f.service().from('pt_authors').insert({ id: 9, name: 'Essai' }).select('name').rollback()
    expect(res).toMatchObject({ status: 201, data: [{ name: 'Essai' }] })
    expect(await f.db.sql`select 1 from public.pt_authors where id = 9`).toHaveLength(0)
  })

  it('fails and rolls back a write past max-affected (PGRST124), and lets one within it through', async () => {
    const over = await f.service().from('pt_chapters').delete().gte('id', 100).maxAffected(2)
    expect(over).toMatchObject({
      status: 400,
      error: { code: 'PGRST124', message: 'Query result exceeds max-affected preference constraint', details: 'The query affects 4 rows' },
    })
    expect(await f.db.sql`select count(*)::int as n from public.pt_chapters`).toEqual([{ n: 4 }])
    // (supabase-js types maxAffected for PostgREST 13 clients; the request it sends is the same)
    const within = (await f.service().from('pt_chapters').update({ n: 9 }).eq('id', 103).maxAffected(1)) as unknown as { status: number }
    expect(within.status).toBe(204)
    const strict = await f.raw('pt_authors', { headers: { Prefer: 'handling=strict, frobnicate' } })
    expect(await strict.json()).toMatchObject({ code: 'PGRST122', details: 'Invalid preferences: frobnicate' })
  })

  it('counts exactly, planned or estimated, on GET and HEAD, with Content-Range and 206 for a part', async () => {
    const exact = await f.reader().from('pt_authors').select('*', { count: 'exact', head: true })
    expect(exact).toMatchObject({ status: 200, count: 3, data: null })
    const partial = await f.raw('pt_authors?select=id&order=id&limit=2', { headers: { Prefer: 'count=exact' } })
    expect(partial.status).toBe(206)
    expect(partial.headers.get('content-range')).toBe('0-1/3')
    for (const count of ['planned', 'estimated'] as const) {
      const res = await f.reader().from('pt_authors').select('id', { count })
      expect(res.status).toBeLessThan(300)
      expect(res.count).toBeGreaterThan(0)
    }
  })

  it('upserts merging or ignoring duplicates, on the primary key or on_conflict, with missing=default', async () => {
    const merged = await f.service().from('pt_authors').upsert([{ id: 3, name: 'Khadija', rank: 4 }, { id: 4, name: 'Vatma', rank: 5 }]).select('id, rank')
      .order('id')
    expect(merged).toMatchObject({ status: 201, data: [{ id: 3, rank: 4 }, { id: 4, rank: 5 }] })
    const ignored = await f.service().from('pt_authors').upsert({ id: 4, name: 'Vatma', rank: 99 }, { ignoreDuplicates: true }).select('id')
    expect(ignored).toMatchObject({ status: 201, data: [] })
    const byName = await f.service().from('pt_authors').upsert({ id: 4, name: 'Vatma', rank: 6 }, { onConflict: 'name' }).select('rank')
    // only updated: 200, as PostgREST answers an upsert that inserted nothing
    expect(byName).toMatchObject({ status: 200, data: [{ rank: 6 }] })
    const defaults = await f.service().from('pt_authors').upsert([{ id: 5, name: 'Oumou' }, { id: 6, name: 'Saad', rank: 1 }], { defaultToNull: false }).select(
      'id, rank, tags',
    ).order('id')
    expect(defaults.data).toEqual([{ id: 5, rank: 7, tags: [] }, { id: 6, rank: 1, tags: [] }])
    await f.db.sql`delete from public.pt_authors where id >= 4`
  })

  it('answers CSV, strips nulls when asked, refuses a type it does not serve (406 PGRST107), and says so of .single()', async () => {
    const csv = await f.reader().from('pt_authors').select('id, name, born').order('id').csv()
    expect(csv.data).toBe('id,name,born\n1,Mariem,1990-05-01\n2,Ahmedou,1985-01-01\n3,Khadija,')
    const stripped = await f.reader().from('pt_authors').select('name, born').eq('id', 3).stripNulls()
    expect(stripped.data).toEqual([{ name: 'Khadija' }])
    const geo = await f.reader().from('pt_authors').select('name').geojson()
    expect(geo).toMatchObject({ status: 406, error: { code: 'PGRST107' } })
    const single = await f.reader().from('pt_authors').select('name').single()
    expect(single).toMatchObject({
      status: 406,
      error: { code: 'PGRST116', message: 'Cannot coerce the result to a single JSON object', details: 'The result contains 3 rows' },
    })
  })
})
