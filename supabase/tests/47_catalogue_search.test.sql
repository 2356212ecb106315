-- public.catalogue_search (migration 20261128080913_catalogue_search.sql): one call returns the
-- catalogue's hits as hybrid_search ranks them, and for each subject of those hits that the caller names,
-- that subject's candidates as hybrid_search ranks them with the subject (and its namespace) as filters;
-- a subject the hits do not hold, or one the caller does not name, gets no rows.
begin;
create extension if not exists pgtap with schema extensions;
set local search_path = public, extensions;
select plan(6);

create function pg_temp.v(seed integer) returns extensions.vector language sql as $$
  select array_agg(case when (i * seed) % 7 = 0 then 1.0 else ((i + seed) % 5) / 10.0 end order by i)::real[]::extensions.vector
    from generate_series(1, 1536) i
$$;

insert into documents (id, title, grade, subject, language, status, chunk_count, vectordb_namespace) values
  ('a4700000-0000-4000-8000-000000000001', 'Histoire 5AS', '5AS', 'histoire', 'fr', 'ready', 2, 'grade-5as-histoire'),
  ('a4700000-0000-4000-8000-000000000002', 'Géographie 5AS', '5AS', 'geographie', 'fr', 'ready', 2, 'grade-5as-geographie'),
  ('a4700000-0000-4000-8000-000000000003', 'Histoire 6C', '6C', 'histoire', 'fr', 'ready', 1, 'grade-6c-histoire'),
  ('a4700000-0000-4000-8000-000000000004', 'Philosophie 5AS', '5AS', 'philosophie', 'fr', 'ready', 1, 'grade-5as-philosophie');
insert into document_chunks (id, file_id, page_number, chunk_index, content) values
  ('h1', 'a4700000-0000-4000-8000-000000000001', 1, 0, 'L''empire du Ghana commerçait l''or le long du fleuve.'),
  ('h2', 'a4700000-0000-4000-8000-000000000001', 2, 1, 'Les Almoravides partirent du fleuve Sénégal vers le nord.'),
  ('g1', 'a4700000-0000-4000-8000-000000000002', 1, 0, 'Le fleuve Sénégal traverse quatre pays et nourrit la vallée.'),
  ('g2', 'a4700000-0000-4000-8000-000000000002', 2, 1, 'La crue du fleuve inonde les terres de décrue.'),
  ('k1', 'a4700000-0000-4000-8000-000000000003', 1, 0, 'L''empire almoravide et le commerce transsaharien.'),
  ('p1', 'a4700000-0000-4000-8000-000000000004', 1, 0, 'La conscience et la liberté selon les philosophes.');
insert into vectors (index_name, namespace, id, file_id, embedding, metadata)
  select 'curriculum-1536', d.vectordb_namespace, c.id, c.file_id, pg_temp.v(row_number() over (order by c.id)::integer),
         jsonb_build_object('grade', d.grade, 'subject', d.subject, 'language', 'fr', 'page_number', c.page_number)
    from document_chunks c join documents d on d.id = c.file_id where d.id::text like 'a4700000-%';

create temp table found on commit drop as
  select * from catalogue_search('curriculum-1536', pg_temp.v(3), 'le fleuve et l''empire', 5, '5AS', null,
                                 array['histoire', 'geographie', 'mathematiques'],
                                 array['grade-5as-histoire', 'grade-5as-geographie', 'grade-5as-mathematiques'], 3,
                                 5, 5, 3, 3) with ordinality;

select is((select array_agg(row(f.id, f.distance, f.dense_rank, f.text_rank, f.score, f.text_coverage)::text order by f.ordinality)
             from found f where f.scope is null),
          (select array_agg(row(h.id, h.distance, h.dense_rank, h.text_rank, h.score, h.text_coverage)::text order by h.o)
             from hybrid_search('curriculum-1536', pg_temp.v(3), 'le fleuve et l''empire', 5, null, '5AS', null, null, null, 5, 5)
                  with ordinality h(id, file_id, namespace, page_number, source_url, ingestion_ts, distance, dense_rank, text_rank, score, text_coverage, o)),
          'the catalogue''s hits, as hybrid_search ranks them');
select is((select array_agg(row(f.id, f.distance, f.dense_rank, f.text_rank, f.score)::text order by f.ordinality)
             from found f where f.scope = 'histoire'),
          (select array_agg(row(h.id, h.distance, h.dense_rank, h.text_rank, h.score)::text order by h.o)
             from hybrid_search('curriculum-1536', pg_temp.v(3), 'le fleuve et l''empire', 3, 'grade-5as-histoire', '5AS', 'histoire', null, null, 3, 3,
                                p_coverage => false)
                  with ordinality h(id, file_id, namespace, page_number, source_url, ingestion_ts, distance, dense_rank, text_rank, score, text_coverage, o)),
          'a subject of the hits: its candidates as hybrid_search ranks them with the subject and its namespace');
select is((select array_agg(distinct f.grade) from found f where f.scope = 'histoire'), array['5AS'], 'within the grade given');
select is((select count(*)::integer from found f where f.scope = 'mathematiques'), 0, 'a subject the hits do not hold: no rows');
select ok(exists (select 1 from found f where f.scope is null and f.subject = 'philosophie'), 'philosophie is among the hits');
select is((select count(*)::integer from found f where f.scope = 'philosophie'), 0, 'a subject the caller does not name: no rows of its own');

select * from finish();
rollback;
