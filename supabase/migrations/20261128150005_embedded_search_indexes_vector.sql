-- Search on the embedded database (PGlite): its HNSW indexes, the index of every chunk and the subjects'
-- indexes, hold the vectors themselves (vector_cosine_ops), not their halfvec copies. pgvector's halfvec
-- distances have no SIMD code in WebAssembly: publishing a 200-page document's 200 vectors into the
-- halfvec index of every chunk and its subject's took 16 s on PGlite, 2.2 s into the same two indexes on
-- vector. The halfvec copies halve the memory of a large index (20261128090043_halfvec_search.sql), for a
-- deployment's hundred thousand chunks; an embedded database is a laptop's, a few thousand, its indexes
-- in memory either way. On PostgreSQL nothing changes: the same indexes on halfvec copies, and
-- match_chunks and the subjects' indexes build the same statements as before. The same indexes exist on
-- both (one per subject, made by the trigger of 20261128112127_subject_search_indexes.sql), and the
-- search orders by the expression its database's indexes hold. Deviation: docs/contract.md.

-- why: whether the search indexes hold halfvec copies (PostgreSQL) or the vectors (PGlite, in WebAssembly)
create or replace function private.search_indexes_hold_halfvec()
returns boolean
language sql stable set search_path = '' as $$
  select pg_catalog.version() not like '%PGlite%'
$$;

-- why: as 20261128112127_subject_search_indexes.sql, the index holding what the index of every chunk holds
create or replace function private.ensure_subject_search_index(p_subject text)
returns boolean
language plpgsql security definer set search_path = '' as $$
declare
  name text := private.subject_search_index_name(p_subject);
begin
  if p_subject is null then
    return false;
  end if;
  -- two ingestions naming the same new subject at once: the second waits for the first's transaction and
  -- then finds its index (create index if not exists is not safe against a concurrent create)
  perform pg_catalog.pg_advisory_xact_lock(pg_catalog.hashtext(name));
  if exists (select 1 from pg_catalog.pg_class c where c.relname = name and c.relnamespace = 'public'::regnamespace) then
    return false;
  end if;
  execute format('create index if not exists %I on public.vectors using hnsw (%s) where (metadata ->> %L) = %L', name,
                 case when private.search_indexes_hold_halfvec() then '(embedding::extensions.halfvec(1536)) extensions.halfvec_cosine_ops'
                      else 'embedding extensions.vector_cosine_ops' end,
                 'subject', p_subject);
  return true;
end;
$$;

-- why: as 20261128090043_halfvec_search.sql, the HNSW path ordering by the expression the indexes hold
-- (the halfvec distance on PostgreSQL, the vector distance on PGlite) and returning its K ranked by the
-- exact distance
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
    || case when private.search_indexes_hold_halfvec()
            then ' order by (v.embedding::extensions.halfvec(1536)) operator(extensions.<=>) ($2::extensions.halfvec(1536)) limit $3) c'
            else ' order by v.embedding operator(extensions.<=>) $2 limit $3) c' end
    || '
       order by c.distance, c.id'
    using p_index, p_query, p_k, p_namespace, p_grade, p_subject, p_language, p_file;
  perform set_config('enable_seqscan', seqscan, true), set_config('enable_sort', sort, true), set_config('jit', jit, true);
end;
$$;

-- why: an embedded database made before this: its halfvec indexes rebuilt on the vectors (every subject a
-- document names gets its index again; an empty one of a subject no document names is made when one does)
do $$
declare
  idx record;
begin
  if private.search_indexes_hold_halfvec() then
    return;
  end if;
  for idx in select i.indexname from pg_catalog.pg_indexes i
              where i.schemaname = 'public' and i.tablename = 'vectors' and i.indexdef like '%USING hnsw%halfvec%' loop
    execute format('drop index public.%I', idx.indexname);
  end loop;
  create index if not exists vectors_embedding_hnsw_idx on public.vectors using hnsw (embedding extensions.vector_cosine_ops);
  perform private.ensure_subject_search_index(d.subject)
     from (select distinct subject from public.documents where subject is not null) d;
end;
$$;
