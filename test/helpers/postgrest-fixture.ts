// The PostgREST fixture of the /rest/v1 conformance tests: authors, books and chapters (two keys between
// books and authors, RLS hiding draft chapters from readers), one-to-one details, a self-referencing topic
// tree, a table with names that need quotes, and functions of every shape (scalar, set, jsonb, composite,
// overloaded, unnamed, volatile, void, computed fields and relationships); a gateway over them, its keys
// and a signed-in reader, with the supabase-js clients the tests use.
import { createClient, type SupabaseClient } from '@supabase/supabase-js'
import { createTestDatabase, type TestDatabase } from './db.ts'
import { testConfig } from './app.ts'
import { createUser, type TestUser } from './users.ts'
import { type Gateway, startGateway } from '../../scripts/lib/gateway.ts'
import { apiKey } from '../../functions-shared/lib/keys.ts'
import { LOCAL_JWT_SECRET } from '../../functions-shared/config.ts'
import { createLogRoot } from '../../functions-shared/lib/logger.ts'

export interface PostgrestFixture {
  db: TestDatabase
  gateway: Gateway
  /** supabase-js signed in as the reader (authenticated), and with the service-role key */
  reader: () => SupabaseClient
  service: () => SupabaseClient
  /** a request to /rest/v1/<path> with the service-role key */
  raw: (path: string, init?: RequestInit) => Promise<Response>
  close: () => Promise<void>
}

const options = { auth: { persistSession: false, autoRefreshToken: false, detectSessionInUrl: false } }

export async function startPostgrestFixture(): Promise<PostgrestFixture> {
  const db = await createTestDatabase()
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
  const gateway = await startGateway({
    config: testConfig({ LOG_LEVEL: 'silent', RATE_LIMIT_REST_PER_MINUTE: '10000' }),
    sql: db.sql,
    port: 0,
    deps: { logs: createLogRoot({ level: 'silent' }) },
  })
  const anonKey = await apiKey(LOCAL_JWT_SECRET, 'anon')
  const serviceKey = await apiKey(LOCAL_JWT_SECRET, 'service_role')
  const user: TestUser = await createUser(db.sql, { fullName: 'Lectrice' })
  return {
    db,
    gateway,
    reader: () => createClient(gateway.url, anonKey, { ...options, accessToken: async () => user.token }),
    service: () => createClient(gateway.url, serviceKey, options),
    raw: (path, init = {}) =>
      fetch(`${gateway.url}/rest/v1/${path}`, {
        ...init,
        headers: { apikey: serviceKey, Authorization: `Bearer ${serviceKey}`, ...(init.headers as Record<string, string>) },
      }),
    close: async () => {
      await gateway.close(1000)
      await db.close()
    },
  }
}
