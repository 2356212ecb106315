-- The search indexes of each database (20261128150005_embedded_search_indexes_vector.sql): on PostgreSQL
-- the index of every chunk and the subjects' indexes hold halfvec copies, on PGlite the vectors
-- themselves; a subject's new index holds what the index of every chunk holds; match_chunks' HNSW path
-- walks that index (or the subject's) on either, returning what exact ranking returns on a small table.
begin;
create extension if not exists pgtap with schema extensions;
set local search_path = public, extensions;
select plan(8);

create temp table db on commit drop as
  select version() like '%PGlite%' as pglite,
         case when version() like '%PGlite%' then 'USING hnsw \(embedding (extensions\.)?vector_cosine_ops\)'
              else 'USING hnsw \(\(\(embedding\)::(extensions\.)?halfvec\(1536\)\) (extensions\.)?halfvec_cosine_ops\)' end as def;

select is(private.search_indexes_hold_halfvec(), not (select pglite from db), 'halfvec copies on PostgreSQL, the vectors on PGlite');
select matches((select indexdef from pg_indexes where indexname = 'vectors_embedding_hnsw_idx'), (select def from db) || '$',
  'the index of every chunk holds what its database searches');

insert into public.documents (id, title, grade, subject, language, status)
values ('c5300000-0000-4000-8000-000000000053', 'Ondes', '4AS', 'pgtap-53-ondes', 'fr', 'ready');
select matches((select indexdef from pg_indexes where indexname = private.subject_search_index_name('pgtap-53-ondes')),
  (select def from db) || ' WHERE \(\(metadata ->> ''subject''::text\) = ''pgtap-53-ondes''::text\)$',
  'a new subject''s index holds the same, over its chunks');
select is((select count(*)::integer from pg_indexes
            where schemaname = 'public' and tablename = 'vectors' and indexdef like '%USING hnsw%'
              and (indexdef like '%halfvec%') = (select pglite from db)), 0,
  'no search index of the other kind');

insert into public.vectors (index_name, namespace, id, file_id, embedding, metadata)
select 'pgtap-53', 'ns-' || (n % 3), 'v' || n, 'c5300000-0000-4000-8000-000000000053',
       (select array_agg(sin(n * 1536 + d) + 0.3 * cos(d * n))::extensions.vector(1536) from generate_series(1, 1536) d),
       jsonb_build_object('subject', case when n % 2 = 0 then 'pgtap-53-ondes' else 'pgtap-53-autre' end, 'page_number', n)
  from generate_series(1, 60) n;
analyze public.vectors;
create temp table q on commit drop as
  select (select array_agg(sin(11 * 1536 + d) + 0.2 * cos(d))::extensions.vector(1536) from generate_series(1, 1536) d) as v;

create temp table scans_before on commit drop as
  select pg_stat_get_xact_numscans('public.vectors_embedding_hnsw_idx'::regclass) as every,
         pg_stat_get_xact_numscans(format('public.%I', private.subject_search_index_name('pgtap-53-ondes'))::regclass) as subject;
create temp table every on commit drop as
  select (row_number() over ())::integer as pos, m.* from match_chunks('pgtap-53', (select v from q), 5, p_exact_below => 0) m;
select ok(pg_stat_get_xact_numscans('public.vectors_embedding_hnsw_idx'::regclass) > (select every from scans_before),
  'a search without a subject walks the index of every chunk');
select is((select array_agg(id order by pos) from every),
          (select array_agg(id) from (select v.id from public.vectors v where v.index_name = 'pgtap-53'
                                        order by v.embedding <=> (select v from q) limit 5) e),
  'the same rows as exact ranking on a small table');

create temp table by_subject on commit drop as
  select (row_number() over ())::integer as pos, m.* from match_chunks('pgtap-53', (select v from q), 5, null, null, 'pgtap-53-ondes', p_exact_below => 0) m;
select ok(pg_stat_get_xact_numscans(format('public.%I', private.subject_search_index_name('pgtap-53-ondes'))::regclass)
            > (select subject from scans_before),
  'a search with the subject walks its index');
select is((select array_agg(id order by pos) from by_subject),
          (select array_agg(id) from (select v.id from public.vectors v
                                        where v.index_name = 'pgtap-53' and v.metadata ->> 'subject' = 'pgtap-53-ondes'
                                        order by v.embedding <=> (select v from q) limit 5) e),
  'the subject''s rows as exact ranking returns them');

select * from finish();
rollback;
