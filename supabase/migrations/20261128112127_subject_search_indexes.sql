-- Search: an HNSW index per subject. A search with a subject filter and no namespace (a question whose
-- grade is not known, a subject's candidates in catalogue_search) walked the index of every chunk with
-- the iterative scan, past the chunks of other subjects, and for a question whose nearest chunks lie in
-- other subjects it walked far (the slow tail of the dense search). Each subject of the catalogue now has
-- a partial index over its own chunks (`(metadata ->> 'subject') = '<subject>'`, the halfvec expression of
-- vectors_embedding_hnsw_idx): match_chunks' query puts the subject into its plan as a constant (its
-- EXECUTE is planned with the values given), the planner picks that subject's index and the walk reads
-- only the subject's chunks. The index of every chunk stays for the searches without a subject.
-- A subject gets its index when a document first names it (a trigger on public.documents; the index is
-- built then over the chunks that already carry it, none for a new subject), and keeps it: the index of a
-- subject whose documents are all gone is empty. Figures: docs/teacher.md and docs/deploying.md.

-- why: the name of a subject's index, from the subject (any text) and short enough for an identifier
create or replace function private.subject_search_index_name(p_subject text)
returns text
language sql immutable set search_path = '' as $$
  select 'vectors_subject_' || left(pg_catalog.md5(p_subject), 16) || '_hnsw_idx'
$$;

-- why: the subject's partial HNSW index, created when it is missing (one creator at a time); true when it was created
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
  execute format('create index if not exists %I on public.vectors using hnsw ((embedding::extensions.halfvec(1536)) extensions.halfvec_cosine_ops)'
                 ' where (metadata ->> %L) = %L', name, 'subject', p_subject);
  return true;
end;
$$;

-- why: a document that names a subject without an index gives it one, before its chunks are written
create or replace function private.documents_subject_search_index()
returns trigger
language plpgsql security definer set search_path = '' as $$
begin
  perform private.ensure_subject_search_index(new.subject);
  return null;
end;
$$;

drop trigger if exists documents_subject_search_index on public.documents;
create trigger documents_subject_search_index after insert or update of subject on public.documents
  for each row when (new.subject is not null) execute function private.documents_subject_search_index();

-- the subjects of the catalogue so far
select private.ensure_subject_search_index(d.subject)
  from (select distinct subject from public.documents where subject is not null) d;
