-- A vector row is kept whole in its page (20261128120240_vectors_stored_inline.sql): nothing written to
-- the TOAST table for a row that fits, and a row that does not fit still stored whole (its largest value
-- moves out).
begin;
create extension if not exists pgtap with schema extensions;
set local search_path = public, extensions;
select plan(4);

select ok((select 'toast_tuple_target=8160' = any(c.reloptions) from pg_class c where c.oid = 'public.vectors'::regclass),
  'rows are toasted only past a page (toast_tuple_target 8160)');

create temp table toast_before on commit drop as
  select pg_stat_get_xact_tuples_inserted(c.reltoastrelid) as n from pg_class c where c.oid = 'public.vectors'::regclass;
insert into public.vectors (index_name, namespace, id, file_id, embedding, metadata)
select 'pgtap-55', 'grade-4as-physique', 'v' || n, 'c5500000-0000-4000-8000-000000000055',
       (select array_agg(sin(n * 1536 + d))::extensions.vector(1536) from generate_series(1, 1536) d),
       jsonb_build_object('page_number', n)
  from generate_series(1, 5) n;
select is((select pg_stat_get_xact_tuples_inserted(c.reltoastrelid) from pg_class c where c.oid = 'public.vectors'::regclass)
            - (select n from toast_before), 0::bigint, 'five rows written, no TOAST piece');
select is((select min(pg_column_size(v.embedding)) from public.vectors v where v.index_name = 'pgtap-55'), 6152,
  'each embedding whole in its row (1,536 floats and the header, not compressed)');

-- metadata of 4 kB beside the 6 kB embedding: the row does not fit a page, a value moves out
insert into public.vectors (index_name, namespace, id, file_id, embedding, metadata)
select 'pgtap-55', 'grade-4as-physique', 'large', 'c5500000-0000-4000-8000-000000000055',
       (select array_agg(cos(d))::extensions.vector(1536) from generate_series(1, 1536) d),
       jsonb_build_object('source_url', (select string_agg(md5(g::text), '') from generate_series(1, 128) g));
select ok((select v.metadata ->> 'source_url' = (select string_agg(md5(g::text), '') from generate_series(1, 128) g)
                   and v.embedding = (select array_agg(cos(d))::extensions.vector(1536) from generate_series(1, 1536) d)
              from public.vectors v where v.index_name = 'pgtap-55' and v.id = 'large'),
  'a row with 4 kB of metadata is stored and read back whole');

select * from finish();
rollback;
