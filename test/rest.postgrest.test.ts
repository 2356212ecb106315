// /rest/v1 against PostgREST's documented behaviour, through the real supabase-js client: embedding over
// foreign keys (with RLS on every table touched), logic trees, the operators, aliases, casts and JSON
// paths, functions with select= and filters on their rows, GET and HEAD calls, Prefer (tx, max-affected,
// count, resolution, missing, handling) and the media types. Each case is what a hosted project answers.
import { createClient, type SupabaseClient } from '@supabase/supabase-js'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createTestDatabase, type TestDatabase } from './helpers/db.ts'
import { testConfig } from './helpers/app.ts'
import { createUser, type TestUser } from './helpers/users.ts'
import { startGateway, type Gateway } from '../scripts/lib/gateway.ts'
import { apiKey } from '../functions-shared/lib/keys.ts'
import { LOCAL_JWT_SECRET } from '../functions-shared/config.ts'
import { createLogRoot } from '../functions-shared/lib/logger.ts'

let db: TestDatabase
let gateway: Gateway
let anonKey: string
let serviceKey: string
let reader: TestUser

const options = { auth: { persistSession: false, autoRefreshToken: false, detectSessionInUrl: false } }
const as = (user: TestUser): SupabaseClient => createClient(gateway.url, anonKey, { ...options, accessToken: async () => user.token })
const service = (): SupabaseClient => createClient(gateway.url, serviceKey, options)
const raw = (path: string, init: RequestInit = {}) =>
  fetch(`${gateway.url}/rest/v1/${path}`, { ...init, headers: { apikey: serviceKey, Authorization: `Bearer ${serviceKey}`, ...(init.headers as Record<string, string>) } })

beforeAll(async () => {
  db = await createTestDatabase()
  await db.sql.unsafe(`
    create table public.pt_authors (id int primary key, name text not null unique, tags text[] not null default '{}', meta jsonb, born date, rank int default 7);
    create table public.pt_books (id int primary key, author_id int references public.pt_authors (id), editor_id int references public.pt_authors (id),
                                  title text not null, pages int4range, summary text);
    create table public.pt_chapters (id int primary key, book_id int not null references public.pt_books (id), title text not null, n int not null);
    alter table public.pt_authors enable row level security;
    alter table public.pt_books enable row level security;
    alter table public.pt_chapters enable row level security;
    create policy pt_authors_read on public.pt_authors for select to authenticated using (true);
    create policy pt_books_read on public.pt_books for select to authenticated using (true);
    -- a signed-in reader sees every chapter but the drafts
    create policy pt_chapters_read on public.pt_chapters for select to authenticated using (title not like 'Draft%');
    grant select on public.pt_authors, public.pt_books, public.pt_chapters to authenticated;
    grant all on public.pt_authors, public.pt_books, public.pt_chapters to service_role;
    insert into public.pt_authors values
      (1, 'Mariem', '{poésie,conte}', '{"city": "Nouakchott", "zip": "01"}', '1990-05-01', 1),
      (2, 'Ahmedou', '{roman}', '{"city": "Atar"}', '1985-01-01', 2),
      (3, 'Khadija', '{conte,essai}', null, null, 3);
    insert into public.pt_books values
      (10, 1, 2, 'Les dunes', '[1,120)', 'Le vent sur les dunes du désert'),
      (11, 1, null, 'La mer', '[1,80)', 'Les pêcheurs de la mer et le port'),
      (12, 2, 1, 'Le fleuve', '[100,300)', 'Le fleuve Sénégal et ses rives');
    insert into public.pt_chapters values (100, 10, 'Aube', 1), (101, 10, 'Draft: midi', 2), (102, 10, 'Nuit', 3), (103, 12, 'Source', 1);
    create type public.pt_point as (x int, y int);
    create function public.pt_add(a int, b int) returns int language sql immutable as 'select a + b';
    create function public.pt_books_of(p_author int) returns setof public.pt_books language sql stable as 'select * from public.pt_books where author_id = p_author';
    create function public.pt_echo(j jsonb) returns text language sql immutable as 'select jsonb_typeof(j)';
    create function public.pt_norm(p public.pt_point) returns int language sql immutable as 'select abs(p.x) + abs(p.y)';
    create function public.pt_over(a int) returns text language sql immutable as 'select ''int''';
    create function public.pt_over(a text) returns text language sql immutable as 'select ''text''';
    create function public.pt_rename(p_id int, p_name text) returns setof public.pt_authors language sql volatile as
      'update public.pt_authors set name = p_name where id = p_id returning *';
    create function public.pt_nothing() returns void language sql as 'select';
    create table public.pt_author_details (author_id int primary key references public.pt_authors (id), bio text);
    create table public.pt_topics (id int primary key, parent_id int references public.pt_topics (id), name text not null);
    insert into public.pt_author_details values (1, 'Poétesse de Nouakchott');
    insert into public.pt_topics values (1, null, 'Sciences'), (2, 1, 'Physique'), (3, 1, 'Chimie');
    grant select on public.pt_author_details, public.pt_topics to authenticated;
    create table public.pt_odd ("first name" text primary key, "n° de page" int);
    grant all on public.pt_odd to service_role;
    create function public.pt_initial(public.pt_authors) returns text language sql stable as 'select left($1.name, 1)';
    create function public.pt_long_books(a public.pt_authors) returns setof public.pt_books language sql stable as
      'select * from public.pt_books b where b.author_id = a.id and upper(b.pages) > 100';
    create function public.pt_twice(int) returns int language sql immutable as 'select $1 * 2';
    create function public.pt_pick() returns int language sql immutable as 'select 0';
    create function public.pt_pick(n int) returns int language sql immutable as 'select n';
    grant execute on function public.pt_initial(public.pt_authors), public.pt_long_books(public.pt_authors), public.pt_twice(int),
      public.pt_pick(), public.pt_pick(int) to authenticated, service_role;
    grant execute on function public.pt_add(int, int), public.pt_books_of(int), public.pt_echo(jsonb), public.pt_norm(public.pt_point),
      public.pt_over(int), public.pt_over(text), public.pt_rename(int, text), public.pt_nothing() to authenticated, service_role;
  `)
  gateway = await startGateway({ config: testConfig({ LOG_LEVEL: 'silent', RATE_LIMIT_REST_PER_MINUTE: '10000' }), sql: db.sql, port: 0, deps: { logs: createLogRoot({ level: 'silent' }) } })
  anonKey = await apiKey(LOCAL_JWT_SECRET, 'anon')
  serviceKey = await apiKey(LOCAL_JWT_SECRET, 'service_role')
  reader = await createUser(db.sql, { fullName: 'Lectrice' })
})
afterAll(async () => {
  await gateway?.close(1000)
  await db?.close()
})

describe('embedding over foreign keys', () => {
  it('reads many-to-one as an object, one-to-many as an array, nested two levels, under every table\'s policies', async () => {
    const books = await as(reader).from('pt_books').select('title, author:pt_authors!author_id(name), editor:pt_authors!editor_id(name)').order('id')
    expect(books).toMatchObject({ error: null, data: [
      { title: 'Les dunes', author: { name: 'Mariem' }, editor: { name: 'Ahmedou' } },
      { title: 'La mer', author: { name: 'Mariem' }, editor: null },
      { title: 'Le fleuve', author: { name: 'Ahmedou' }, editor: { name: 'Mariem' } },
    ] })
    const nested = await as(reader).from('pt_authors').select('name, pt_books!author_id(title, pt_chapters(title))').eq('id', 1).single()
    // the draft chapter is hidden by pt_chapters' policy, in an embed as in a read of its own
    expect(nested.data).toEqual({ name: 'Mariem', pt_books: [{ title: 'Les dunes', pt_chapters: [{ title: 'Aube' }, { title: 'Nuit' }] }, { title: 'La mer', pt_chapters: [] }] })
    const all = await service().from('pt_chapters').select('title').eq('book_id', 10)
    expect(all.data).toHaveLength(3)
  })

  it('asks for a hint when two keys link the same tables (300 PGRST201), and says when none does (PGRST200)', async () => {
    const ambiguous = await as(reader).from('pt_books').select('title, pt_authors(name)')
    expect(ambiguous.status).toBe(300)
    expect(ambiguous.error).toMatchObject({ code: 'PGRST201', message: "Could not embed because more than one relationship was found for 'pt_books' and 'pt_authors'" })
    expect(ambiguous.error!.hint).toContain("'pt_authors!pt_books_author_id_fkey'")
    const none = await as(reader).from('pt_chapters').select('title, pt_authors(name)')
    expect(none).toMatchObject({ status: 400, error: { code: 'PGRST200' } })
  })

  it('filters, orders and limits an embedded resource, and !inner keeps only the rows whose embed is not empty', async () => {
    const ordered = await as(reader).from('pt_authors').select('name, pt_books!author_id(title)').eq('id', 1)
      .order('title', { referencedTable: 'pt_books', ascending: true }).limit(1, { referencedTable: 'pt_books' }).single()
    expect(ordered.data).toEqual({ name: 'Mariem', pt_books: [{ title: 'La mer' }] })
    const filtered = await as(reader).from('pt_authors').select('name, pt_books!author_id(title)').eq('pt_books.title', 'Le fleuve').order('id')
    expect(filtered.data).toEqual([{ name: 'Mariem', pt_books: [] }, { name: 'Ahmedou', pt_books: [{ title: 'Le fleuve' }] }, { name: 'Khadija', pt_books: [] }])
    const inner = await as(reader).from('pt_authors').select('name, pt_books!author_id!inner(title)').eq('pt_books.title', 'Le fleuve')
    expect(inner.data).toEqual([{ name: 'Ahmedou', pt_books: [{ title: 'Le fleuve' }] }])
    const withBooks = await as(reader).from('pt_authors').select('name, pt_books!author_id(id)').not('pt_books', 'is', null).order('id')
    expect(withBooks.data!.map((a) => a.name)).toEqual(['Mariem', 'Ahmedou'])
    const notSelected = await as(reader).from('pt_authors').select('name').eq('pt_books.title', 'x')
    expect(notSelected).toMatchObject({ status: 400, error: { code: 'PGRST108', message: "'pt_books' is not an embedded resource in this request" } })
  })
})

describe('relationships as PostgREST reads them', () => {
  it('reads one-to-one as an object, a table\'s children through its own key, and an embed named by a key\'s column or name', async () => {
    const one = await as(reader).from('pt_authors').select('name, pt_author_details(bio)').order('id').limit(2)
    expect(one.data).toEqual([{ name: 'Mariem', pt_author_details: { bio: 'Poétesse de Nouakchott' } }, { name: 'Ahmedou', pt_author_details: null }])
    const children = await as(reader).from('pt_topics').select('name, pt_topics(name)').eq('id', 1).single()
    expect(children.data).toEqual({ name: 'Sciences', pt_topics: [{ name: 'Physique' }, { name: 'Chimie' }] })
    const parent = await as(reader).from('pt_topics').select('name, parent_id(name)').eq('id', 2).single()
    expect(parent.data).toEqual({ name: 'Physique', parent_id: { name: 'Sciences' } })
    const byKey = await as(reader).from('pt_authors').select('name, edited:pt_books_editor_id_fkey(title)').eq('id', 1).single()
    expect(byKey.data).toEqual({ name: 'Mariem', edited: [{ title: 'Le fleuve' }] })
  })

  it('reads computed fields and computed relationships (functions of the row), and an empty embed only filters', async () => {
    const rows = await as(reader).from('pt_authors').select('name, pt_initial, pt_long_books(title)').order('id')
    expect(rows.data).toEqual([
      { name: 'Mariem', pt_initial: 'M', pt_long_books: [{ title: 'Les dunes' }] },
      { name: 'Ahmedou', pt_initial: 'A', pt_long_books: [{ title: 'Le fleuve' }] },
      { name: 'Khadija', pt_initial: 'K', pt_long_books: [] },
    ])
    const filtered = await as(reader).from('pt_books').select('title, pt_authors!author_id!inner()').eq('pt_authors.name', 'Ahmedou')
    expect(filtered.data).toEqual([{ title: 'Le fleuve' }])
    const aggregate = await as(reader).from('pt_authors').select('name, pt_books!author_id(count)')
    expect(aggregate).toMatchObject({ status: 400, error: { code: 'PGRST123', message: 'Use of aggregate functions is not allowed' } })
  })

  it('calls a function of an unnamed parameter with {"": value}, and tells overloads apart by the arguments given', async () => {
    expect((await as(reader).rpc('pt_twice', { '': 21 })).data).toBe(42)
    expect((await as(reader).rpc('pt_pick')).data).toBe(0)
    expect((await as(reader).rpc('pt_pick', { n: 3 })).data).toBe(3)
  })
})

describe('names that need quotes', () => {
  it('reads and writes columns whose names hold a space or other signs, written in double quotes', async () => {
    const inserted = await service().from('pt_odd').insert([{ 'first name': 'Aly', 'n° de page': 1 }, { 'first name': 'Binta', 'n° de page': 2 }]).select('"first name","n° de page"')
    expect(inserted).toMatchObject({ status: 201, data: [{ 'first name': 'Aly', 'n° de page': 1 }, { 'first name': 'Binta', 'n° de page': 2 }] })
    expect((await service().from('pt_odd').select('"first name"').eq('"first name"', 'Binta')).data).toEqual([{ 'first name': 'Binta' }])
  })
})

describe('bounds on what one query string may ask', () => {
  it('nests embeds at most 10 levels and 40 in all, logic trees at most 10 levels and 200 conditions (400 each), and answers on', async () => {
    const nest = (levels: number) => Array.from({ length: levels }, () => 'pt_topics(name').join(',') + ')'.repeat(levels)
    expect((await as(reader).from('pt_topics').select(`name,${nest(10)}`).eq('id', 1)).status).toBe(200)
    const deep = await as(reader).from('pt_topics').select(`name,${nest(11)}`)
    expect(deep).toMatchObject({ status: 400, error: { code: 'PGRST100', details: 'embedded resources nest at most 10 levels deep' } })
    // a self-reference nested two hundred levels (the gateway's request line holds a few hundred more)
    expect((await as(reader).from('pt_topics').select(`name,${nest(200)}`)).status).toBe(400)
    const wide = await as(reader).from('pt_topics').select(['name', ...Array.from({ length: 41 }, (_, i) => `t${i}:pt_topics(name)`)].join(','))
    expect(wide.error).toMatchObject({ code: 'PGRST100', details: 'a select names at most 40 embedded resources' })
    const tree = (levels: number): string => (levels === 0 ? 'id.eq.1' : `and(id.gt.0,${tree(levels - 1)})`)
    expect((await as(reader).from('pt_topics').select('name').or(tree(9))).status).toBe(200)
    expect((await as(reader).from('pt_topics').select('name').or(tree(10))).error).toMatchObject({ code: 'PGRST100', details: 'a logic tree nests at most 10 levels deep' })
    const many = await as(reader).from('pt_topics').select('name').or(Array.from({ length: 201 }, (_, i) => `id.eq.${i}`).join(','))
    expect(many.error).toMatchObject({ code: 'PGRST100', details: 'a logic tree holds at most 200 conditions' })
    expect((await as(reader).from('pt_topics').select('name').eq('id', 1)).data).toEqual([{ name: 'Sciences' }])
  })
})

describe('filters', () => {
  const names = async (q: PromiseLike<{ data: { name: string }[] | null; error: unknown }>) => {
    const { data, error } = await q
    expect(error).toBeNull()
    return data!.map((r) => r.name)
  }
  it('reads or/and/not trees, nested and negated, and on embedded resources', async () => {
    const base = () => as(reader).from('pt_authors').select('name').order('id')
    expect(await names(base().or('name.eq.Mariem,and(id.gt.1,rank.lt.3)'))).toEqual(['Mariem', 'Ahmedou'])
    expect(await names(base().not('name', 'eq', 'Mariem'))).toEqual(['Ahmedou', 'Khadija'])
    expect(await names(base().not('name', 'in', '(Mariem,Khadija)'))).toEqual(['Ahmedou'])
    expect(await names(base().or('id.in.(1,3),name.like.*dou'))).toEqual(['Mariem', 'Ahmedou', 'Khadija'])
    const r = await raw('pt_authors?select=name&not.or=(id.eq.1,id.eq.2)')
    expect(await r.json()).toEqual([{ name: 'Khadija' }])
    const embedded = await as(reader).from('pt_authors').select('name, pt_books!author_id(title)').or('title.eq.La mer,title.eq.Le fleuve', { referencedTable: 'pt_books' }).order('id')
    expect(embedded.data![0]).toEqual({ name: 'Mariem', pt_books: [{ title: 'La mer' }] })
  })

  it('has the array, range, pattern, distinctness and full-text operators', async () => {
    const base = () => as(reader).from('pt_authors').select('name').order('id')
    expect(await names(base().contains('tags', ['conte']))).toEqual(['Mariem', 'Khadija'])
    expect(await names(base().containedBy('tags', ['roman', 'essai', 'conte']))).toEqual(['Ahmedou', 'Khadija'])
    expect(await names(base().overlaps('tags', ['roman', 'essai']))).toEqual(['Ahmedou', 'Khadija'])
    expect(await names(base().contains('meta', { city: 'Atar' }))).toEqual(['Ahmedou'])
    expect(await names(base().match({ rank: 2 }))).toEqual(['Ahmedou'])
    expect(await names(base().filter('name', 'imatch', '^kh'))).toEqual(['Khadija'])
    expect(await names(base().filter('born', 'isdistinct', '1990-05-01'))).toEqual(['Ahmedou', 'Khadija'])
    expect(await names(base().filter('name', 'like(any)', '{M*,*ija}'))).toEqual(['Mariem', 'Khadija'])
    const books = () => as(reader).from('pt_books').select('title').order('id')
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
    const rows = await as(reader).from('pt_authors').select('label:name, id::text, city:meta->>city, meta->zip').not('meta', 'is', null).order('meta->>city')
    expect(rows.data).toEqual([{ label: 'Ahmedou', id: '2', city: 'Atar', zip: null }, { label: 'Mariem', id: '1', city: 'Nouakchott', zip: '01' }])
    expect((await as(reader).from('pt_authors').select('name').eq('meta->>city', 'Atar')).data).toEqual([{ name: 'Ahmedou' }])
    const unknown = await as(reader).from('pt_authors').select('name').filter('name', 'near', 'x')
    expect(unknown).toMatchObject({ status: 400, error: { code: 'PGRST100' } })
  })
})

describe('functions', () => {
  it('calls by POST, GET and HEAD, with select=, filters and order on the rows a function returns', async () => {
    expect(await as(reader).rpc('pt_add', { a: 2, b: 3 })).toMatchObject({ status: 200, data: 5 })
    expect(await as(reader).rpc('pt_add', { a: 2, b: 3 }, { get: true })).toMatchObject({ status: 200, data: 5 })
    const rows = await as(reader).rpc('pt_books_of', { p_author: 1 }).select('title').neq('title', 'La mer').order('title')
    expect(rows).toMatchObject({ status: 200, data: [{ title: 'Les dunes' }] })
    const embedded = await as(reader).rpc('pt_books_of', { p_author: 1 }, { get: true }).select('title, pt_chapters(title)').eq('id', 10).single()
    expect(embedded.data).toEqual({ title: 'Les dunes', pt_chapters: [{ title: 'Aube' }, { title: 'Nuit' }] })
    const head = await as(reader).rpc('pt_books_of', { p_author: 1 }, { head: true, count: 'exact' })
    expect(head).toMatchObject({ status: 200, count: 2, data: null })
    expect(await as(reader).rpc('pt_nothing')).toMatchObject({ status: 204, error: null })
  })

  it('types jsonb and composite arguments, tells overloads apart or says it cannot (300 PGRST203)', async () => {
    expect((await as(reader).rpc('pt_echo', { j: { a: 1 } })).data).toBe('object')
    expect((await as(reader).rpc('pt_echo', { j: 'texte' })).data).toBe('string')
    expect((await as(reader).rpc('pt_echo', { j: [1, 2] })).data).toBe('array')
    expect((await as(reader).rpc('pt_norm', { p: { x: -3, y: 4 } })).data).toBe(7)
    const over = await as(reader).rpc('pt_over', { a: 1 })
    expect(over.status).toBe(300)
    expect(over.error).toMatchObject({ code: 'PGRST203', message: expect.stringContaining('Could not choose the best candidate function between: public.pt_over(a => integer), public.pt_over(a => text)') })
    expect(await as(reader).rpc('pt_nope', { a: 1 })).toMatchObject({ status: 404, error: { code: 'PGRST202' } })
  })

  it('calls a function by GET in a read-only transaction: one that writes is refused and writes nothing', async () => {
    const res = await as(reader).rpc('pt_rename', { p_id: 3, p_name: 'Khadijetou' }, { get: true })
    expect(res.status).toBe(405)
    expect(res.error).toMatchObject({ code: '25006' })
    expect(await db.sql`select name from public.pt_authors where id = 3`).toEqual([{ name: 'Khadija' }])
  })
})

describe('Prefer and media types', () => {
  it('rolls back with tx=rollback, answering as if committed', async () => {
    const res = await service().from('pt_authors').insert({ id: 9, name: 'Essai' }).select('name').rollback()
    expect(res).toMatchObject({ status: 201, data: [{ name: 'Essai' }] })
    expect(await db.sql`select 1 from public.pt_authors where id = 9`).toHaveLength(0)
  })

  it('fails and rolls back a write past max-affected (PGRST124), and lets one within it through', async () => {
    const over = await service().from('pt_chapters').delete().gte('id', 100).maxAffected(2)
    expect(over).toMatchObject({ status: 400, error: { code: 'PGRST124', message: 'Query result exceeds max-affected preference constraint', details: 'The query affects 4 rows' } })
    expect(await db.sql`select count(*)::int as n from public.pt_chapters`).toEqual([{ n: 4 }])
    // (supabase-js types maxAffected for PostgREST 13 clients; the request it sends is the same)
    const within = (await service().from('pt_chapters').update({ n: 9 }).eq('id', 103).maxAffected(1)) as unknown as { status: number }
    expect(within.status).toBe(204)
    const strict = await raw('pt_authors', { headers: { Prefer: 'handling=strict, frobnicate' } })
    expect(await strict.json()).toMatchObject({ code: 'PGRST122', details: 'Invalid preferences: frobnicate' })
  })

  it('counts exactly, planned or estimated, on GET and HEAD, with Content-Range and 206 for a part', async () => {
    const exact = await as(reader).from('pt_authors').select('*', { count: 'exact', head: true })
    expect(exact).toMatchObject({ status: 200, count: 3, data: null })
    const partial = await raw('pt_authors?select=id&order=id&limit=2', { headers: { Prefer: 'count=exact' } })
    expect(partial.status).toBe(206)
    expect(partial.headers.get('content-range')).toBe('0-1/3')
    for (const count of ['planned', 'estimated'] as const) {
      const res = await as(reader).from('pt_authors').select('id', { count })
      expect(res.status).toBeLessThan(300)
      expect(res.count).toBeGreaterThan(0)
    }
  })

  it('upserts merging or ignoring duplicates, on the primary key or on_conflict, with missing=default', async () => {
    const merged = await service().from('pt_authors').upsert([{ id: 3, name: 'Khadija', rank: 4 }, { id: 4, name: 'Vatma', rank: 5 }]).select('id, rank').order('id')
    expect(merged).toMatchObject({ status: 201, data: [{ id: 3, rank: 4 }, { id: 4, rank: 5 }] })
    const ignored = await service().from('pt_authors').upsert({ id: 4, name: 'Vatma', rank: 99 }, { ignoreDuplicates: true }).select('id')
    expect(ignored).toMatchObject({ status: 201, data: [] })
    const byName = await service().from('pt_authors').upsert({ id: 4, name: 'Vatma', rank: 6 }, { onConflict: 'name' }).select('rank')
    // only updated: 200, as PostgREST answers an upsert that inserted nothing
    expect(byName).toMatchObject({ status: 200, data: [{ rank: 6 }] })
    const defaults = await service().from('pt_authors').upsert([{ id: 5, name: 'Oumou' }, { id: 6, name: 'Saad', rank: 1 }], { defaultToNull: false }).select('id, rank, tags').order('id')
    expect(defaults.data).toEqual([{ id: 5, rank: 7, tags: [] }, { id: 6, rank: 1, tags: [] }])
    await db.sql`delete from public.pt_authors where id >= 4`
  })

  it('answers CSV, strips nulls when asked, refuses a type it does not serve (406 PGRST107), and says so of .single()', async () => {
    const csv = await as(reader).from('pt_authors').select('id, name, born').order('id').csv()
    expect(csv.data).toBe('id,name,born\n1,Mariem,1990-05-01\n2,Ahmedou,1985-01-01\n3,Khadija,')
    const stripped = await as(reader).from('pt_authors').select('name, born').eq('id', 3).stripNulls()
    expect(stripped.data).toEqual([{ name: 'Khadija' }])
    const geo = await as(reader).from('pt_authors').select('name').geojson()
    expect(geo).toMatchObject({ status: 406, error: { code: 'PGRST107' } })
    const single = await as(reader).from('pt_authors').select('name').single()
    expect(single).toMatchObject({ status: 406, error: { code: 'PGRST116', message: 'Cannot coerce the result to a single JSON object', details: 'The result contains 3 rows' } })
  })
})
