-- An HNSW index per subject (20261128112127_subject_search_indexes.sql): a document that names a new
-- subject gives it a partial index over the halfvec copies of its chunks, one per subject, and
-- match_chunks with that subject (and no namespace) walks it rather than the index of every chunk,
-- returning what exact ranking returns on a small table; a search without a subject keeps the index of
-- every chunk.
begin;
create extension if not exists pgtap with schema extensions;
set local search_path = public, extensions;
select plan(10);

create temp table subjects on commit drop as
  select 'pgtap-51-optique'::text as s, private.subject_search_index_name('pgtap-51-optique') as idx
  union all select 'pgtap-51-l''histoire', private.subject_search_index_name('pgtap-51-l''histoire');

select is((select count(*)::integer from pg_indexes i join subjects x on x.idx = i.indexname), 0, 'no index before a document names the subjects');

insert into public.documents (id, title, grade, subject, language, status)
values ('c5100000-0000-4000-8000-000000000051', 'Optique', '4AS', 'pgtap-51-optique', 'fr', 'ready'),
       ('c5100000-0000-4000-8000-000000000052', 'Optique 2', '5C', 'pgtap-51-optique', 'fr', 'ready');

select is((select count(*)::integer from pg_indexes i join subjects x on x.idx = i.indexname), 1, 'one index for the subject two documents name');
select matches((select i.indexdef from pg_indexes i join subjects x on x.idx = i.indexname where x.s = 'pgtap-51-optique'),
  'USING hnsw \(\(\(embedding\)::(extensions\.)?halfvec\(1536\)\) (extensions\.)?halfvec_cosine_ops\) WHERE \(\(metadata ->> ''subject''::text\) = ''pgtap-51-optique''::text\)',
  'a partial HNSW index on the halfvec copies of the chunks of that subject');

update public.documents set subject = 'pgtap-51-l''histoire' where id = 'c5100000-0000-4000-8000-000000000052';
select is((select count(*)::integer from pg_indexes i join subjects x on x.idx = i.indexname), 2, 'a subject a document takes on gets its index');
select is(private.ensure_subject_search_index('pgtap-51-optique'), false, 'a subject that has its index keeps it');

insert into public.vectors (index_name, namespace, id, file_id, embedding, metadata)
select 'pgtap-51', 'ns-' || (n % 3), 'v' || n, 'c5100000-0000-4000-8000-000000000051',
       (select array_agg(sin(n * 1536 + d) + 0.3 * cos(d * n))::extensions.vector(1536) from generate_series(1, 1536) d),
       jsonb_build_object('subject', case when n % 2 = 0 then 'pgtap-51-optique' else 'pgtap-51-l''histoire' end, 'page_number', n)
  from generate_series(1, 60) n;
analyze public.vectors;
create temp table q on commit drop as
  select (select array_agg(sin(7 * 1536 + d) + 0.2 * cos(d))::extensions.vector(1536) from generate_series(1, 1536) d) as v;

create temp table scans_before on commit drop as
  select pg_stat_get_xact_numscans((select format('public.%I', idx) from subjects where s = 'pgtap-51-optique')::regclass) as subject,
         pg_stat_get_xact_numscans('public.vectors_embedding_hnsw_idx'::regclass) as every;
create temp table hits on commit drop as
  select (row_number() over ())::integer as pos, m.* from match_chunks('pgtap-51', (select v from q), 5, null, null, 'pgtap-51-optique', p_exact_below => 0) m;
select ok(pg_stat_get_xact_numscans((select format('public.%I', idx) from subjects where s = 'pgtap-51-optique')::regclass)
            > (select subject from scans_before)
          and pg_stat_get_xact_numscans('public.vectors_embedding_hnsw_idx'::regclass) = (select every from scans_before),
  'a search with the subject walks its index, not the index of every chunk');
select is((select array_agg(id order by pos) from hits),
          (select array_agg(id) from (select v.id from public.vectors v
                                        where v.index_name = 'pgtap-51' and v.metadata ->> 'subject' = 'pgtap-51-optique'
                                        order by v.embedding <=> (select v from q) limit 5) e),
  'the same rows as exact ranking of the subject on a small table');

create temp table scans_hybrid on commit drop as
  select pg_stat_get_xact_numscans((select format('public.%I', idx) from subjects where s = 'pgtap-51-optique')::regclass) as subject;
create temp table hybrid on commit drop as
  select * from hybrid_search('pgtap-51', (select v from q), 'lumière', 5, p_subject => 'pgtap-51-optique', p_exact_below => 0);
select ok(pg_stat_get_xact_numscans((select format('public.%I', idx) from subjects where s = 'pgtap-51-optique')::regclass)
            > (select subject from scans_hybrid)
          and pg_stat_get_xact_numscans('public.vectors_embedding_hnsw_idx'::regclass) = (select every from scans_before),
  'the hybrid search ranks its dense branch through the same index');

create temp table unfiltered on commit drop as select * from match_chunks('pgtap-51', (select v from q), 5, p_exact_below => 0);
select ok(pg_stat_get_xact_numscans('public.vectors_embedding_hnsw_idx'::regclass) > (select every from scans_before),
  'a search without a subject walks the index of every chunk');
select is((select count(*)::integer from match_chunks('pgtap-51', (select v from q), 5, null, null, 'pgtap-51-l''histoire', p_exact_below => 0)), 5,
  'a subject with a quote in its name is searched through its index');

select * from finish();
rollback;
