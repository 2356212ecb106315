-- Search: the HNSW index holds half-precision (halfvec) copies of the embeddings, half the memory of
-- the vector index it replaces, so a deployment keeps it in shared buffers with less memory (a dense
-- search's slow tail was index pages read from outside them). The stored embeddings stay vector(1536):
-- the index orders the candidates, their distance is the exact vector cosine distance and the K
-- returned are ranked by it. Exact ranking (a namespace, a document, a small table) is unchanged.
-- Figures: docs/teacher.md and docs/deploying.md.

-- why: rebuilt only while it is still the vector index (a second run keeps the halfvec one)
do $$
begin
  if exists (select 1 from pg_catalog.pg_indexes i
              where i.schemaname = 'public' and i.indexname = 'vectors_embedding_hnsw_idx' and i.indexdef not like '%halfvec%') then
    drop index public.vectors_embedding_hnsw_idx;
  end if;
end;
$$;
create index if not exists vectors_embedding_hnsw_idx on public.vectors
  using hnsw ((embedding::extensions.halfvec(1536)) extensions.halfvec_cosine_ops);

-- why: as 20261101000500_search.sql, but the HNSW path orders by the halfvec distance (the expression
-- the index holds) and returns its K ranked by the exact distance. JIT is off there: the sort above the
-- forced index scan costs the plan past jit_above_cost, and compiling it took longer than the search.
create or replace function public.match_chunks(p_index text, p_query extensions.vector, p_k integer, p_namespace text default null,
                         p_grade text default null, p_subject text default null, p_language text default null,
                         p_file uuid default null, p_exact_below integer default 10000,
                         p_ef_search integer default 200)
returns table (id text, file_id uuid, namespace text, page_number integer, source_url text, ingestion_ts text, distance double precision)
language plpgsql set search_path = '' set hnsw.iterative_scan = 'relaxed_order' as $$
declare
  use_hnsw boolean := p_namespace is null and p_file is null
                      and (select c.reltuples from pg_catalog.pg_class c where c.oid = 'public.vectors'::regclass) >= p_exact_below;
  seqscan text := current_setting('enable_seqscan');
  sort text := current_setting('enable_sort');
  jit text := current_setting('jit');
  filters text := case when p_namespace is not null then ' and v.namespace = $4' else '' end
    || case when p_grade is not null then ' and lower(v.metadata ->> ''grade'') = lower($5)' else '' end
    || case when p_subject is not null then ' and v.metadata ->> ''subject'' = $6' else '' end
    || case when p_language is not null then ' and v.metadata ->> ''language'' = $7' else '' end
    || case when p_file is not null then ' and v.file_id = $8' else '' end;
begin
  perform set_config('hnsw.ef_search', least(1000, greatest(p_ef_search, p_k * 2))::text, true);
  if not use_hnsw then
    return query execute
      'select v.id, v.file_id, v.namespace, (v.metadata ->> ''page_number'')::integer, v.metadata ->> ''source_url'',
              v.metadata ->> ''ingestion_ts'', v.embedding operator(extensions.<=>) $2 as distance
         from public.vectors v where v.index_name = $1' || filters || ' order by distance limit $3'
      using p_index, p_query, p_k, p_namespace, p_grade, p_subject, p_language, p_file;
    return;
  end if;
  perform set_config('enable_seqscan', 'off', true), set_config('enable_sort', 'off', true), set_config('jit', 'off', true);
  return query execute
    'select c.id, c.file_id, c.namespace, c.page_number, c.source_url, c.ingestion_ts, c.distance from (
       select v.id, v.file_id, v.namespace, (v.metadata ->> ''page_number'')::integer as page_number,
              v.metadata ->> ''source_url'' as source_url, v.metadata ->> ''ingestion_ts'' as ingestion_ts,
              v.embedding operator(extensions.<=>) $2 as distance
         from public.vectors v where v.index_name = $1' || filters
    || ' order by (v.embedding::extensions.halfvec(1536)) operator(extensions.<=>) ($2::extensions.halfvec(1536)) limit $3) c
       order by c.distance, c.id'
    using p_index, p_query, p_k, p_namespace, p_grade, p_subject, p_language, p_file;
  perform set_config('enable_seqscan', seqscan, true), set_config('enable_sort', sort, true), set_config('jit', jit, true);
end;
$$;
