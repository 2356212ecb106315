-- Hybrid retrieval: PostgreSQL full-text search over the chunk text fused with the pgvector search by
-- reciprocal rank fusion (the pattern of Supabase's hybrid search guide), in one function and one round
-- trip. The text students read is never changed: search works on a folded form of it, made by one SQL
-- function for the stored vectors and the queries alike.
create extension if not exists unaccent with schema extensions;

-- why: the search vector of a text (never shown), one function with one search_path switch (each
-- switch costs about 0.05 ms, paid on every chunk written and every question). Its search form: Latin
-- accents removed (unaccent, its dictionary named, so the STABLE function serves an IMMUTABLE one) and
-- lower case; Arabic diacritics and tatweel removed, alef/hamza forms, taa marbuta and alef maqsura
-- folded, the Hassaniya gaf read as qaf, Arabic-Indic digits as ASCII, and the conjunction or
-- preposition glued to the article (wa-l-, fa-l-, bi-l-, ka-l-, li-l-) reduced to the article, which
-- the Arabic stemmer then removes. Then its Latin words go through the French configuration (stemming,
-- stop words) and its Arabic words through the Arabic one, so a text in either language, or mixing
-- both, is indexed by what its words mean to each; last, the words that say nothing of a lesson —
-- question words, pronouns, politeness, "explain" — in French, Arabic and Hassaniya, as the
-- configurations stem them (the Arabic one has no stop list), which would make every chunk match every
-- question.
create function private.search_vector(p_text text) returns tsvector
language sql immutable parallel safe strict set search_path = '' as $$
  select pg_catalog.ts_delete(
           to_tsvector('pg_catalog.french', regexp_replace(f, '[' || chr(1536) || '-' || chr(1791) || ']+', ' ', 'g'))
             || to_tsvector('pg_catalog.arabic', regexp_replace(f, '[a-z0-9]+', ' ', 'g')),
           array['va', 'aid', 'alor', 'bien', 'ca', 'cec', 'cel', 'combien', 'comment', 'dir', 'dis', 'dois',
                 'doit', 'doivent', 'donc', 'est-ce', 'expliqu', 'explique-moi', 'fair', 'fais',
                 'fait', 'faut', 'le', 'lecon', 'merc', 'peut', 'peux', 'pourquoi', 'quand', 'quel',
                 'quelqu', 'quoi', 'salut', 'signif', 'stp', 'svp', 'tre', 'veut', 'veut-dir',
                 'veux', 'اريد', 'اشرح', 'اشرحل', 'اشنه', 'اعرف', 'اعلاش', 'ال', 'الا', 'الت',
                 'الذ', 'ان', 'او', 'اين', 'بعض', 'بغي', 'تلك', 'ثم', 'ذ', 'ذا', 'ذلك', 'ذين', 'شن',
                 'شنه', 'شنهو', 'شنو', 'عل', 'علاش', 'علي', 'عن', 'عند', 'في', 'فيه', 'قد', 'كان',
                 'كل', 'كيف', 'كيفاش', 'كيفتاش', 'لا', 'لاش', 'لقد', 'لم', 'لماذ', 'لي', 'ليا',
                 'ما', 'ماذ', 'ماه', 'ماهو', 'مت', 'مع', 'معن', 'من', 'نبغ', 'نعم', 'هذا', 'هذه',
                 'هل', 'هم', 'هو', 'هي', 'وضح', 'يا', 'ياسر', 'يعن', 'يكون'])
    from (select regexp_replace(
                     regexp_replace(
                       translate(lower(extensions.unaccent('extensions.unaccent'::regdictionary, p_text)),
                                 -- أ إ آ ٱ, ى, ة, گ ڭ, the Arabic-Indic digits, and tatweel (removed: nothing stands for it)
                                 chr(1571) || chr(1573) || chr(1570) || chr(1649) || chr(1609) || chr(1577) || chr(1711) || chr(1709)
                                   || '٠١٢٣٤٥٦٧٨٩' || chr(1600),
                                 -- ا ا ا ا, ي, ه, ق ق, 0-9
                                 chr(1575) || chr(1575) || chr(1575) || chr(1575) || chr(1610) || chr(1607) || chr(1602) || chr(1602)
                                   || '0123456789'),
                       -- harakat, tanwin, shadda, sukun and the dagger alef
                       '[' || chr(1611) || '-' || chr(1631) || chr(1648) || ']', '', 'g'),
                     -- a word made of an optional و/ف, then بال, كال, لل or ال, then the noun: the article alone stays
                     '(^|[^' || chr(1569) || '-' || chr(1610) || '])(' || chr(1608) || '|' || chr(1601) || ')?('
                       || chr(1576) || chr(1575) || chr(1604) || '|' || chr(1603) || chr(1575) || chr(1604) || '|' || chr(1604) || chr(1604)
                       || '|' || chr(1575) || chr(1604) || ')([' || chr(1569) || '-' || chr(1610) || ']{2,})',
                     '\1' || chr(1575) || chr(1604) || '\4', 'g') as f) s;
$$;

alter table public.document_chunks add column search_tsv tsvector generated always as (private.search_vector(content)) stored;
create index document_chunks_search_idx on public.document_chunks using gin (search_tsv);

-- why: how many chunks hold each lexeme (its document frequency), so a question's words weigh by how
-- rare they are in this catalogue (inverse document frequency): "Almoravides" says more than "temps".
-- Kept by statement triggers on document_chunks; the row with the empty lexeme counts the chunks.
-- Concurrent publications update the same rows in lexeme order, so they queue and never deadlock.
create table private.search_lexemes (
  lexeme text primary key,
  chunks bigint not null check (chunks >= 0)
);
revoke all on table private.search_lexemes from public, anon, authenticated;

create function private.count_search_lexemes() returns trigger
language plpgsql security definer set search_path = '' as $$
begin
  if tg_op = 'INSERT' then
    insert into private.search_lexemes as s (lexeme, chunks)
    select l, count(*) from (
      select unnest(pg_catalog.tsvector_to_array(n.search_tsv)) as l from new_rows n
      union all select '' from new_rows) x
     group by l order by l
    on conflict (lexeme) do update set chunks = s.chunks + excluded.chunks;
  else
    update private.search_lexemes s set chunks = greatest(s.chunks - x.n, 0)
      from (select l, count(*) as n from (
              select unnest(pg_catalog.tsvector_to_array(o.search_tsv)) as l from old_rows o
              union all select '' from old_rows) y
             group by l order by l) x
     where s.lexeme = x.l;
  end if;
  return null;
end;
$$;
revoke all on function private.count_search_lexemes() from public, anon, authenticated;

create trigger document_chunks_count_lexemes_insert after insert on public.document_chunks
  referencing new table as new_rows for each statement execute function private.count_search_lexemes();
create trigger document_chunks_count_lexemes_delete after delete on public.document_chunks
  referencing old table as old_rows for each statement execute function private.count_search_lexemes();

insert into private.search_lexemes (lexeme, chunks)
select l, count(*) from (select unnest(pg_catalog.tsvector_to_array(search_tsv)) as l from public.document_chunks
                         union all select '' from public.document_chunks) x
 group by l;

-- why: the hybrid search of a chat turn. The dense branch is public.match_chunks (the HNSW path with its
-- iterative scan and forced index, or exact ranking for a namespace, a textbook or a small table). The
-- text branch weighs each word of the question by its rarity in the catalogue (the BM25 idf,
-- ln(1 + (N - n + 0.5) / (n + 0.5)) over N chunks, n holding it) and ranks the chunks of ready documents
-- under the same prefilters by the weight of the question's words they hold; a word held by more than
-- p_text_common of the chunks only adds to the score, it does not make a chunk a match (unless every
-- word is that common), which keeps the match set small; of those, the rarest make the match while the
-- chunks they hold add up to p_text_postings (so the work is bounded whatever the catalogue's size). The
-- match set is ranked by those words through the GIN index alone; its best 2 × p_text_depth are then
-- weighed by every word of the question. Each branch keeps its best p_dense_depth / p_text_depth, and
-- the two rankings are fused by reciprocal rank fusion:
-- score = w_d / (k + dense rank) + w_t / (k + text rank). Every row carries its cosine distance, and the
-- share of the question's word weight it holds (text_coverage; a word the catalogue does not know
-- weighs as a word held by one chunk); with p_coverage false, a row only the dense branch found gets 0
-- instead of having its search vector read (the retrieval of an answer does not use it).
create function public.hybrid_search(p_index text, p_query extensions.vector, p_query_text text, p_k integer,
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
language plpgsql set search_path = '' as $$
declare
  queries tsquery[];
  weights double precision[];
  rare tsquery[];
  rare_weights double precision[];
  whole double precision;
  q tsquery;
  few boolean;
  seqscan text := current_setting('enable_seqscan');
begin
  -- one statement: the question's words, each with its weight (idf), and the words that make a chunk a
  -- match: those that are not common (or all of them when every one is), rarest first, while the
  -- chunks they hold add up to p_text_postings (the rarest always). The work follows the budget, not
  -- the catalogue, and the chunks that hold the rarer words are those that weigh most.
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
         string_agg(pg_catalog.quote_literal(x.l), ' | ') filter (where x.n > 0),
         (select array_agg(p.query order by p.n, p.l) from picked p where p.before is null or p.before + p.n <= p_text_postings),
         (select array_agg(p.weight order by p.n, p.l) from picked p where p.before is null or p.before + p.n <= p_text_postings)
    into queries, weights, whole, q, rare, rare_weights
    from weighed x;
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
  -- one GIN lookup per matching word, summed per chunk: no chunk's search vector is read here, so the
  -- cost follows the postings of the question's rarer words, not the size of what they match
  postings as materialized (
    select p.id, p.file_id, w.weight
      from unnest(rare, rare_weights) w(query, weight)
      -- a lateral subquery of its own (offset 0): the GIN index is its only quick path, whatever the
      -- planner guesses of the prefilters (reading every chunk of the allowed documents instead
      -- detoasts each search vector once per word)
      cross join lateral (select c.id, c.file_id from public.document_chunks c where c.search_tsv @@ w.query offset 0) p
     where p_text_depth > 0 and not few
    union all
    select c.id, c.file_id, w.weight
      from allowed a
      join public.document_chunks c on c.file_id = a.id
      cross join unnest(rare, rare_weights) w(query, weight)
     where p_text_depth > 0 and few and c.search_tsv @@ w.query
  ),
  matched as (
    select p.id, sum(p.weight) as rare_weight
      from postings p
     where p.file_id in (select a.id from allowed a)
     group by p.id
     order by rare_weight desc, p.id
     limit greatest(p_text_depth, 0) * 2
  ),
  -- the best of them, weighed by every word of the question (the common ones too) and its density
  scored as (
    select m.id, c.file_id, a.namespace,
           (select sum(w.weight) from unnest(queries, weights) w(query, weight) where c.search_tsv @@ w.query) as weight,
           ts_rank_cd(c.search_tsv, q, 1) as density
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
         coalesce(u.weight / nullif(whole, 0), 0) as text_coverage
    from (
      select x.id, x.file_id, x.namespace, x.page_number, x.source_url, x.ingestion_ts, x.distance, x.rank as dense_rank,
             t.rank as text_rank,
             coalesce(t.weight, (select sum(w.weight) from unnest(queries, weights) w(query, weight)
                                  join public.document_chunks c on c.id = x.id where p_coverage and c.search_tsv @@ w.query)) as weight
        from dense x left join text_hits t on t.id = x.id
      union all
      select o.id, o.file_id, o.namespace, o.page_number, o.source_url, o.ingestion_ts, o.distance, null::integer, o.rank,
             (select t.weight from text_hits t where t.id = o.id)
        from text_only o
    ) u
   order by score desc, u.distance, u.id
   limit p_k;
  perform set_config('enable_seqscan', seqscan, true);
end;
$$;

revoke all on function private.search_vector(text) from public, anon, authenticated;
-- why: the service writes chunks (the generated search_tsv calls search_vector) and searches them
grant execute on function private.search_vector(text) to service_role;
grant select on table private.search_lexemes to service_role;
revoke all on function public.hybrid_search(text, extensions.vector, text, integer, text, text, text, text, uuid, integer, integer, integer,
  double precision, double precision, integer, integer, double precision, integer, boolean) from public, anon, authenticated;
grant execute on function public.hybrid_search(text, extensions.vector, text, integer, text, text, text, text, uuid, integer, integer, integer,
  double precision, double precision, integer, integer, double precision, integer, boolean) to service_role;
