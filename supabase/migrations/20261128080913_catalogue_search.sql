-- One search for a question whose subject is to be found. The subject inference searched the whole
-- catalogue, then the retrieval searched the subject it chose with the same text and vector: the
-- question's words, their weights and the postings of its rarer words were read twice. Now:
-- - private.search_words: the question's words and weights (hybrid_search's first statement);
-- - private.fuse_scope: the dense branch, the text ranking and the fusion of one scope (the filters of
--   one search), from postings read before;
-- - public.hybrid_search keeps its signature and results, made of the two;
-- - public.catalogue_search reads the words and postings once, ranks the catalogue (the inference's hits)
--   and then each subject of those hits the caller names (the retrieval's candidates for that subject,
--   what hybrid_search returns for it), in one call.

-- why: a hit of one scope, as hybrid_search returns it
do $$
begin
  create type private.search_hit as (id text, file_id uuid, namespace text, page_number integer, source_url text,
                                     ingestion_ts text, distance double precision, dense_rank integer, text_rank integer,
                                     score double precision, text_coverage double precision);
exception when duplicate_object then null;
end;
$$;

-- why: the question's words, each with its weight (idf), and the words that make a chunk a match: those
-- that are not common (or all of them when every one is), rarest first, while the chunks they hold add
-- up to p_text_postings (the rarest always). The work follows the budget, not the catalogue, and the
-- chunks that hold the rarer words are those that weigh most.
create or replace function private.search_words(p_query_text text, p_text_common double precision, p_text_postings integer)
returns table (queries tsquery[], weights double precision[], whole double precision, q tsquery, rare tsquery[],
               rare_weights double precision[])
language plpgsql stable set search_path = '' set plan_cache_mode = force_generic_plan as $$
begin
  return query
  with stats as (
    select coalesce((select s.chunks from private.search_lexemes s where s.lexeme = ''), 0)::double precision as total
  ),
  words as (
    select w.l, coalesce(s.chunks, 0)::double precision as n
      from unnest(pg_catalog.tsvector_to_array(private.search_vector(coalesce(p_query_text, '')))) w(l)
      left join private.search_lexemes s on s.lexeme = w.l
     where w.l <> '' and w.l !~ '[''\\]'
  ),
  weighed as (
    select w.l, w.n, pg_catalog.quote_literal(w.l)::tsquery as query,
           ln(1 + (greatest(st.total, 1) - greatest(w.n, 1) + 0.5) / (greatest(w.n, 1) + 0.5)) as weight,
           w.n > 0 and w.n <= p_text_common * st.total as uncommon
      from words w cross join stats st
  ),
  picked as (
    select x.l, x.n, x.query, x.weight,
           sum(x.n) over (order by x.n, x.l rows between unbounded preceding and 1 preceding) as before
      from weighed x
     where x.n > 0 and (x.uncommon or not exists (select 1 from weighed y where y.uncommon))
  )
  select array_agg(x.query order by x.l), array_agg(x.weight order by x.l), sum(x.weight),
         (string_agg(pg_catalog.quote_literal(x.l), ' | ') filter (where x.n > 0))::tsquery,
         (select array_agg(p.query order by p.n, p.l) from picked p where p.before is null or p.before + p.n <= p_text_postings),
         (select array_agg(p.weight order by p.n, p.l) from picked p where p.before is null or p.before + p.n <= p_text_postings)
    from weighed x;
end;
$$;

-- why: the postings of the question's rarer words within the documents a search may read (ready, under
-- its prefilters), summed per chunk: one GIN lookup per word, so the cost follows the postings of the
-- rarer words, not the size of what they match (no chunk's search vector is read); for a prefilter that
-- leaves few chunks (p_few: a namespace, a textbook), those chunks' own search vectors instead. The rows
-- are those the text branch ranks (fuse_scope).
create or replace function private.rare_postings(p_rare tsquery[], p_rare_weights double precision[], p_text boolean, p_few boolean,
                                                 p_namespace text, p_grade text, p_subject text, p_language text, p_file uuid)
returns table (id text, file_id uuid, rare_weight double precision)
language plpgsql stable set search_path = '' set plan_cache_mode = force_generic_plan as $$
begin
  return query
  with allowed as (
    select d.id
      from public.documents d
     where d.status = 'ready'
       and (p_namespace is null or d.vectordb_namespace = p_namespace)
       and (p_grade is null or lower(d.grade) = lower(p_grade))
       and (p_subject is null or d.subject = p_subject)
       and (p_language is null or d.language = p_language)
       and (p_file is null or d.id = p_file)
  ),
  postings as materialized (
    select p.id, p.file_id, w.weight
      from unnest(p_rare, p_rare_weights) w(query, weight)
      -- a lateral subquery of its own (offset 0): the GIN index is its only quick path, whatever the
      -- planner guesses of the prefilters (reading every chunk of the allowed documents instead
      -- detoasts each search vector once per word)
      cross join lateral (select c.id, c.file_id from public.document_chunks c where c.search_tsv @@ w.query offset 0) p
     where p_text and not p_few
    union all
    select c.id, c.file_id, w.weight
      from allowed a
      join public.document_chunks c on c.file_id = a.id
      cross join unnest(p_rare, p_rare_weights) w(query, weight)
     where p_text and p_few and c.search_tsv @@ w.query
  )
  select p.id, p.file_id, sum(p.weight)
    from postings p
   where p.file_id in (select a.id from allowed a)
   group by p.id, p.file_id;
end;
$$;

-- why: one scope of the hybrid search (see hybrid_search in the search baseline for the ranking): its
-- dense branch (public.match_chunks), its text branch from the postings of the question's rarer words
-- read before (p_ids, p_files, p_rare: each chunk with the sum of those words' weights it holds, over
-- documents that include the scope's), and their fusion. Called with enable_seqscan off (the chunks are
-- read by their key).
create or replace function private.fuse_scope(p_index text, p_query extensions.vector, p_k integer, p_namespace text,
                                              p_grade text, p_subject text, p_language text, p_file uuid,
                                              p_dense_depth integer, p_text_depth integer, p_rrf_k integer,
                                              p_dense_weight double precision, p_text_weight double precision,
                                              p_exact_below integer, p_ef_search integer, p_coverage boolean,
                                              p_queries tsquery[], p_weights double precision[], p_whole double precision,
                                              p_q tsquery, p_ids text[], p_files uuid[], p_rare double precision[])
returns setof private.search_hit
language plpgsql set search_path = '' set plan_cache_mode = force_generic_plan as $$
begin
  return query
  with dense as (
    select m.id, m.file_id, m.namespace, m.page_number, m.source_url, m.ingestion_ts, m.distance,
           (row_number() over (order by m.distance, m.id))::integer as rank
      from public.match_chunks(p_index, p_query, greatest(p_dense_depth, 1), p_namespace, p_grade, p_subject, p_language, p_file,
                               p_exact_below, p_ef_search) m
  ),
  allowed as (
    select d.id, d.vectordb_namespace as namespace
      from public.documents d
     where d.status = 'ready'
       and (p_namespace is null or d.vectordb_namespace = p_namespace)
       and (p_grade is null or lower(d.grade) = lower(p_grade))
       and (p_subject is null or d.subject = p_subject)
       and (p_language is null or d.language = p_language)
       and (p_file is null or d.id = p_file)
  ),
  matched as (
    select p.id, p.rare_weight
      from unnest(p_ids, p_files, p_rare) p(id, file_id, rare_weight)
     where p_text_depth > 0 and p.file_id in (select a.id from allowed a)
     order by p.rare_weight desc, p.id
     limit greatest(p_text_depth, 0) * 2
  ),
  -- the best of them, weighed by every word of the question (the common ones too) and its density
  scored as (
    select m.id, c.file_id, a.namespace,
           (select sum(w.weight) from unnest(p_queries, p_weights) w(query, weight) where c.search_tsv @@ w.query) as weight,
           ts_rank_cd(c.search_tsv, p_q, 1) as density
      from matched m
      join public.document_chunks c on c.id = m.id
      join allowed a on a.id = c.file_id
  ),
  text_hits as (
    select t.id, t.file_id, t.namespace, t.weight,
           (row_number() over (order by t.weight desc, t.density desc, t.id))::integer as rank
      from scored t
     order by rank
     limit greatest(p_text_depth, 0)
  ),
  text_only as (
    select t.id, t.file_id, v.namespace, (v.metadata ->> 'page_number')::integer as page_number, v.metadata ->> 'source_url' as source_url,
           v.metadata ->> 'ingestion_ts' as ingestion_ts, v.embedding operator(extensions.<=>) p_query as distance, t.rank
      from text_hits t
      join public.vectors v on v.index_name = p_index and v.namespace = t.namespace and v.id = t.id
     where not exists (select 1 from dense x where x.id = t.id)
  )
  select u.id, u.file_id, u.namespace, u.page_number, u.source_url, u.ingestion_ts, u.distance,
         u.dense_rank, u.text_rank,
         coalesce(p_dense_weight / (p_rrf_k + u.dense_rank), 0) + coalesce(p_text_weight / (p_rrf_k + u.text_rank), 0) as score,
         coalesce(u.weight / nullif(p_whole, 0), 0) as text_coverage
    from (
      select x.id, x.file_id, x.namespace, x.page_number, x.source_url, x.ingestion_ts, x.distance, x.rank as dense_rank,
             t.rank as text_rank,
             coalesce(t.weight, (select sum(w.weight) from unnest(p_queries, p_weights) w(query, weight)
                                  join public.document_chunks c on c.id = x.id where p_coverage and c.search_tsv @@ w.query)) as weight
        from dense x left join text_hits t on t.id = x.id
      union all
      select o.id, o.file_id, o.namespace, o.page_number, o.source_url, o.ingestion_ts, o.distance, null::integer, o.rank,
             (select t.weight from text_hits t where t.id = o.id)
        from text_only o
    ) u
   order by score desc, u.distance, u.id
   limit p_k;
end;
$$;

-- why: the hybrid search of the search baseline, unchanged in its results: its words, then the postings
-- of the rarer words (through the GIN index, or, for a prefilter that leaves few chunks, the search
-- vectors of those chunks), then its one scope.
create or replace function public.hybrid_search(p_index text, p_query extensions.vector, p_query_text text, p_k integer,
                                     p_namespace text default null, p_grade text default null, p_subject text default null,
                                     p_language text default null, p_file uuid default null,
                                     p_dense_depth integer default 20, p_text_depth integer default 20, p_rrf_k integer default 60,
                                     p_dense_weight double precision default 1, p_text_weight double precision default 1,
                                     p_exact_below integer default 10000, p_ef_search integer default 200,
                                     p_text_common double precision default 0.2, p_text_postings integer default 400,
                                     p_coverage boolean default true)
returns table (id text, file_id uuid, namespace text, page_number integer, source_url text, ingestion_ts text,
               distance double precision, dense_rank integer, text_rank integer, score double precision,
               text_coverage double precision)
language plpgsql set search_path = '' set plan_cache_mode = force_generic_plan as $$
declare
  w record;
  few boolean;
  ids text[];
  files uuid[];
  rares double precision[];
  seqscan text := current_setting('enable_seqscan');
begin
  select * into w from private.search_words(p_query_text, p_text_common, p_text_postings);
  -- a prefilter that leaves few chunks (a namespace, a textbook): their own search vectors are read
  -- rather than postings that lie mostly outside them; a document without a count reads as large
  select coalesce(sum(coalesce(d.chunk_count, p_text_postings + 1)), 0) <= p_text_postings into few
    from public.documents d
   where d.status = 'ready'
     and (p_namespace is not null or p_file is not null)
     and (p_namespace is null or d.vectordb_namespace = p_namespace)
     and (p_grade is null or lower(d.grade) = lower(p_grade))
     and (p_subject is null or d.subject = p_subject)
     and (p_language is null or d.language = p_language)
     and (p_file is null or d.id = p_file);
  few := few and (p_namespace is not null or p_file is not null);
  -- why: the postings are read through the GIN index; a plan cached for any question (its words unknown)
  -- may guess a sequential scan of every chunk instead, which reads each search vector once per word
  perform set_config('enable_seqscan', 'off', true);
  select array_agg(g.id), array_agg(g.file_id), array_agg(g.rare_weight) into ids, files, rares
    from private.rare_postings(w.rare, w.rare_weights, p_text_depth > 0, few, p_namespace, p_grade, p_subject, p_language, p_file) g;
  return query
  select h.* from private.fuse_scope(p_index, p_query, p_k, p_namespace, p_grade, p_subject, p_language, p_file,
                                     p_dense_depth, p_text_depth, p_rrf_k, p_dense_weight, p_text_weight, p_exact_below, p_ef_search,
                                     p_coverage, w.queries, w.weights, w.whole, w.q, ids, files, rares) h;
  perform set_config('enable_seqscan', seqscan, true);
end;
$$;

-- why: the search of a question whose subject is to be found, once. The catalogue under the grade and
-- language given is ranked as hybrid_search ranks it (scope null: the inference's hits, with their text
-- coverage); then, for each subject of those hits that p_scopes names, that subject's candidates as the
-- retrieval's hybrid_search would return them (p_scope_k, its depths, its namespace from
-- p_scope_namespaces, no coverage). With p_scope_voters and p_scope_ratio, only the subjects the hits
-- are likely to choose: those whose vote (each of the first p_scope_voters hits giving its text coverage
-- divided by its position, as the inference weighs them in the search's order) reaches p_scope_ratio of
-- the best one's; a subject's candidates cost a dense search and a text ranking of their own. The question's words and the postings of its rarer words are read
-- once for all of them (a subject's documents are among the catalogue's). Each row carries its
-- document's grade and subject; each scope's rows come in their order.
create or replace function public.catalogue_search(p_index text, p_query extensions.vector, p_query_text text, p_k integer,
                                                   p_grade text, p_language text, p_scopes text[], p_scope_namespaces text[],
                                                   p_scope_k integer, p_dense_depth integer default 20, p_text_depth integer default 20,
                                                   p_scope_dense_depth integer default 20, p_scope_text_depth integer default 20,
                                                   p_rrf_k integer default 60, p_dense_weight double precision default 1,
                                                   p_text_weight double precision default 1, p_exact_below integer default 10000,
                                                   p_ef_search integer default 200, p_text_common double precision default 0.2,
                                                   p_text_postings integer default 400, p_scope_voters integer default null,
                                                   p_scope_ratio double precision default null)
returns table (scope text, id text, file_id uuid, namespace text, page_number integer, source_url text, ingestion_ts text,
               distance double precision, dense_rank integer, text_rank integer, score double precision,
               text_coverage double precision, grade text, subject text)
language plpgsql set search_path = '' set plan_cache_mode = force_generic_plan as $$
declare
  w record;
  ids text[];
  files uuid[];
  rares double precision[];
  hits private.search_hit[];
  s record;
  seqscan text := current_setting('enable_seqscan');
begin
  select * into w from private.search_words(p_query_text, p_text_common, p_text_postings);
  perform set_config('enable_seqscan', 'off', true);
  select array_agg(g.id), array_agg(g.file_id), array_agg(g.rare_weight) into ids, files, rares
    from private.rare_postings(w.rare, w.rare_weights, p_text_depth > 0 or p_scope_text_depth > 0, false,
                               null, p_grade, null, p_language, null) g;
  hits := array(select h from private.fuse_scope(p_index, p_query, p_k, null, p_grade, null, p_language, null,
                                                 p_dense_depth, p_text_depth, p_rrf_k, p_dense_weight, p_text_weight,
                                                 p_exact_below, p_ef_search, true, w.queries, w.weights, w.whole, w.q,
                                                 ids, files, rares) h);
  return query
  select null::text, h.id, h.file_id, h.namespace, h.page_number, h.source_url, h.ingestion_ts, h.distance, h.dense_rank,
         h.text_rank, h.score, h.text_coverage, d.grade, d.subject
    from unnest(hits) with ordinality h
    left join public.documents d on d.id = h.file_id
   order by h.ordinality;
  for s in
    with voted as (
      select d.subject, sum(h.text_coverage / h.ordinality) as weight
        from unnest(hits) with ordinality h join public.documents d on d.id = h.file_id
       where d.subject is not null and (p_scope_voters is null or h.ordinality <= p_scope_voters)
       group by d.subject
    )
    select x.subject, x.namespace
      from unnest(p_scopes, p_scope_namespaces) with ordinality x(subject, namespace, position)
     where x.subject in (select v.subject from voted v
                          where p_scope_ratio is null or v.weight >= p_scope_ratio * (select max(b.weight) from voted b))
     order by x.position
  loop
    return query
    select s.subject, h.id, h.file_id, h.namespace, h.page_number, h.source_url, h.ingestion_ts, h.distance, h.dense_rank,
           h.text_rank, h.score, h.text_coverage, d.grade, d.subject
      from private.fuse_scope(p_index, p_query, p_scope_k, s.namespace, p_grade, s.subject, p_language, null,
                              p_scope_dense_depth, p_scope_text_depth, p_rrf_k, p_dense_weight, p_text_weight,
                              p_exact_below, p_ef_search, false, w.queries, w.weights, w.whole, w.q, ids, files, rares)
           with ordinality h
      left join public.documents d on d.id = h.file_id
     order by h.ordinality;
  end loop;
  perform set_config('enable_seqscan', seqscan, true);
end;
$$;
