-- The dense search on the halfvec HNSW index (20261128090043_halfvec_search.sql): the index holds
-- half-precision copies, match_chunks' HNSW path takes it and returns the exact vector distances in
-- their order, the same rows as exact ranking on a small table, and restores the planner settings.
begin;
create extension if not exists pgtap with schema extensions;
set local search_path = public, extensions;
select plan(7);

insert into public.vectors (index_name, namespace, id, file_id, embedding, metadata)
select 'pgtap-54', 'grade-4as-physique', 'v' || n, 'c5400000-0000-4000-8000-000000000054',
       (select array_agg(sin(n * 1536 + d) + 0.3 * cos(d * n))::extensions.vector(1536) from generate_series(1, 1536) d),
       jsonb_build_object('subject', case when n % 2 = 0 then 'physique' else 'histoire' end, 'page_number', n)
  from generate_series(1, 60) n;
analyze public.vectors;
create temp table q on commit drop as
  select (select array_agg(sin(7 * 1536 + d) + 0.2 * cos(d))::extensions.vector(1536) from generate_series(1, 1536) d) as v;

select matches((select indexdef from pg_indexes where indexname = 'vectors_embedding_hnsw_idx'),
  case when version() like '%PGlite%' then 'USING hnsw \(embedding (extensions\.)?vector_cosine_ops\)' else 'halfvec\(1536\).*halfvec_cosine_ops' end,
  'the HNSW index holds halfvec copies (halfvec_cosine_ops; on PGlite the vectors, 20261128150005_embedded_search_indexes_vector.sql)');

create temp table scans_before on commit drop as
  select pg_stat_get_xact_numscans('public.vectors_embedding_hnsw_idx'::regclass) as n, current_setting('jit') as jit;
create temp table hnsw on commit drop as
  select (row_number() over ())::integer as pos, m.* from match_chunks('pgtap-54', (select v from q), 5, null, null, 'physique', p_exact_below => 0) m;
select ok(pg_stat_get_xact_numscans('public.vectors_embedding_hnsw_idx'::regclass) > (select n from scans_before),
  'the HNSW path scans the halfvec index');
select is((select count(*)::integer from hnsw h join public.vectors v on v.index_name = 'pgtap-54' and v.id = h.id
            where h.distance = v.embedding <=> (select v from q)), 5, 'every row carries its exact vector cosine distance');
select ok((select bool_and(h.distance >= p.distance) from hnsw h join hnsw p on p.pos = h.pos - 1), 'ranked by that distance');
select is((select array_agg(id order by pos) from hnsw),
          (select array_agg(id) from (select v.id from public.vectors v
                                        where v.index_name = 'pgtap-54' and v.metadata ->> 'subject' = 'physique'
                                        order by v.embedding <=> (select v from q) limit 5) e),
  'the same rows as exact ranking on a small table');
select is((select array_agg(id order by distance, id) from match_chunks('pgtap-54', (select v from q), 5, 'grade-4as-physique')),
          (select array_agg(id) from (select v.id from public.vectors v
                                        where v.index_name = 'pgtap-54' and v.namespace = 'grade-4as-physique'
                                        order by v.embedding <=> (select v from q), v.id limit 5) e),
  'a namespace is still ranked exactly');
select is((select current_setting('enable_seqscan') || current_setting('enable_sort') || current_setting('jit')),
          (select 'on' || 'on' || jit from scans_before), 'the planner settings are restored (enable_seqscan, enable_sort, jit)');

select * from finish();
rollback;
