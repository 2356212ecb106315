-- Ingestion: the job queue, the documents with their chunks and vectors, and the state rules that move a
-- reference into the vector index (spec §2.2-§2.6, §3.1-§3.3). Every job transition and every rejected
-- document is written to the ingestion audit.
--
-- Ingestion attempts cannot damage what is served. A job is the *current* one of its reference when no
-- newer job exists for that reference; only the current job may change the reference and its document.
-- An ingestion stages its chunks and vectors aside and publishes them in one transaction at the end, so
-- the catalogue always serves the latest version that completed: a crashed, reclaimed, cancelled or
-- failed attempt leaves the previous version untouched. A forced re-ingestion cancels the job in flight
-- and fences it (its worker's next write is refused).

-- why: one ingestion of one reference into the vector index. A claim counter (attempt) fences stale
-- workers, locked_at finds abandoned runs. A job reports pages done / total while its pages are read (OCR
-- takes seconds a page), which also tells reclaim_stale_jobs that its worker is alive. A job whose PDF
-- needs the recognizer, where none runs (Edge Functions), is put back in the queue marked needs_ocr, and
-- only a claimer that can recognize (a Node worker) takes it.
create table public.ingestion_jobs (
  id uuid primary key default gen_random_uuid(),
  reference_id uuid not null references public.curriculum_references (id) on delete cascade,
  file_id uuid,
  status text not null default 'queued'
    check (status in ('queued', 'parsing', 'tokenizing', 'embedding_request_sent', 'embedding_upserted', 'ready', 'failed')),
  chunks_created integer not null default 0,
  vectors_upserted integer not null default 0,
  retry_count integer not null default 0,
  error_message text,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  attempt integer not null default 0,
  locked_at timestamptz,
  started_at timestamptz,
  finished_at timestamptz,
  -- creation order, exact even inside one transaction (where now() does not move): the claim order
  seq bigint generated always as identity,
  needs_ocr boolean not null default false,
  pages_total integer check (pages_total >= 0),
  pages_done integer not null default 0 check (pages_done >= 0),
  pages_ocr integer not null default 0 check (pages_ocr >= 0)
);
comment on column public.ingestion_jobs.pages_total is 'pages being read by the current attempt (null before its pages are counted)';
comment on column public.ingestion_jobs.pages_ocr is 'pages of the current attempt whose text came from the recognizer (OCR)';
create index ingestion_jobs_status_created_idx on public.ingestion_jobs (status, created_at);
create index ingestion_jobs_reference_idx on public.ingestion_jobs (reference_id);
create index ingestion_jobs_queued_idx on public.ingestion_jobs (seq) where status = 'queued';

-- why: the trail of every job transition, and of documents the quality gate rejected (no job then).
create table public.ingestion_audit (
  id bigint generated always as identity primary key,
  job_id uuid references public.ingestion_jobs (id) on delete cascade,
  reference_id uuid references public.curriculum_references (id) on delete set null,
  source_url text,
  from_status text,
  to_status text not null,
  error_message text,
  details jsonb not null default '{}'::jsonb,
  created_at timestamptz not null default now()
);
create index ingestion_audit_job_idx on public.ingestion_audit (job_id, id);
create index ingestion_audit_created_idx on public.ingestion_audit (created_at desc);

-- why: an ingested curriculum item; the public catalogue shows the ready ones as textbooks.
create table public.documents (
  id uuid primary key default gen_random_uuid(),
  title text,
  major text,
  weight integer not null default 0,
  category text,
  grade text,
  subject text,
  language text,
  reference_id uuid references public.curriculum_references (id) on delete set null,
  status text not null default 'ready' check (status in ('processing', 'ready', 'failed')),
  origin text not null default 'reference' check (origin in ('reference', 'upload')),
  vectordb_index text,
  vectordb_namespace text,
  vectordb_vector_count integer,
  page_count integer,
  chunk_count integer,
  -- advances at every successful ingestion; caches of chunk text and rerank results key on it
  ingestion_ts timestamptz,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
create index documents_status_idx on public.documents (status, grade, subject);
create index documents_reference_idx on public.documents (reference_id);

-- why: chunk text lives here, read by id at answer time; vector metadata carries only light fields. Its
-- search vector is the search form of its text (20261101000500_search.sql).
create table public.document_chunks (
  id text primary key, -- sha256 of file_id:page_number:chunk_index
  file_id uuid not null references public.documents (id) on delete cascade,
  page_number integer not null check (page_number >= 1),
  chunk_index integer not null check (chunk_index >= 0),
  content text not null,
  token_count integer,
  created_at timestamptz not null default now(),
  search_tsv tsvector generated always as (private.search_vector(content)) stored,
  unique (file_id, page_number, chunk_index)
);
create index document_chunks_search_idx on public.document_chunks using gin (search_tsv);
-- the document frequencies of the lexemes (private.search_lexemes)
create trigger document_chunks_count_lexemes_insert after insert on public.document_chunks
  referencing new table as new_rows for each statement execute function private.count_search_lexemes();
create trigger document_chunks_count_lexemes_delete after delete on public.document_chunks
  referencing old table as old_rows for each statement execute function private.count_search_lexemes();

-- why: the vector index (one table for every index name and namespace), searched with HNSW on cosine.
create table public.vectors (
  index_name text not null,
  namespace text not null,
  id text not null,
  file_id uuid not null,
  embedding extensions.vector(1536) not null,
  metadata jsonb not null default '{}'::jsonb,
  updated_at timestamptz not null default now(),
  primary key (index_name, namespace, id)
);
create index vectors_file_idx on public.vectors (file_id);
create index vectors_embedding_hnsw_idx on public.vectors using hnsw (embedding extensions.vector_cosine_ops);

-- why: an ingestion's chunk text and vectors until the job completes; published by complete_ingestion,
-- dropped when the job fails. Deterministic ids as in document_chunks (sha256 of file:page:index).
create table public.ingestion_staging (
  job_id uuid not null references public.ingestion_jobs (id) on delete cascade,
  id text not null,
  file_id uuid not null references public.documents (id) on delete cascade,
  page_number integer not null check (page_number >= 1),
  chunk_index integer not null check (chunk_index >= 0),
  content text not null,
  token_count integer,
  embedding extensions.vector(1536) not null,
  metadata jsonb not null default '{}'::jsonb,
  primary key (job_id, id)
);
create index ingestion_staging_file_idx on public.ingestion_staging (file_id);

-- Service role only (spec §5.7): no policy for anyone else.
alter table public.ingestion_jobs enable row level security;
alter table public.ingestion_audit enable row level security;
revoke all on public.ingestion_jobs, public.ingestion_audit from anon, authenticated;
grant all on public.ingestion_jobs, public.ingestion_audit to service_role;
alter table public.documents enable row level security;
alter table public.document_chunks enable row level security;
alter table public.vectors enable row level security;
revoke all on public.documents, public.document_chunks, public.vectors from anon, authenticated;
grant all on public.documents, public.document_chunks, public.vectors to service_role;
alter table public.ingestion_staging enable row level security;
revoke all on public.ingestion_staging from anon, authenticated;
grant all on public.ingestion_staging to service_role;

-- ---------------------------------------------------------------------------------------------------
-- The job's state machine.

-- why: the fence. True when no newer job exists for the job's reference.
create function private.is_current_job(p_job public.ingestion_jobs) returns boolean
language sql stable set search_path = '' as $$
  select not exists (select 1 from public.ingestion_jobs n where n.reference_id = p_job.reference_id and n.seq > p_job.seq);
$$;

-- why: a document serves a version when an ingestion (or an upload) completed for it.
create function private.serves_version(p_document uuid) returns boolean
language sql stable set search_path = '' as $$
  select exists (select 1 from public.documents d where d.id = p_document and d.status = 'ready');
$$;

-- why: the only way a job changes state. It allows exactly the transitions of spec §3.1, writes the
-- audit row in the same transaction, keeps the document and the reference in step, and refuses an
-- update from a worker whose claim is not the job's current one (p_attempt). A job that is not current
-- cannot be requeued or become ready, and its failure changes neither the document nor the reference. A
-- failure drops the job's staged rows; a document that serves an earlier version keeps serving it (and
-- its reference stays ready); a requeue or a claim leaves a served document ready.
create function public.transition_job(p_job uuid, p_to text, p_attempt integer default null,
                                      p_error text default null, p_details jsonb default '{}'::jsonb)
returns public.ingestion_jobs
language plpgsql security definer set search_path = '' as $$
declare
  job public.ingestion_jobs;
  previous text;
  allowed boolean;
  current boolean;
begin
  select * into job from public.ingestion_jobs where id = p_job for update;
  if not found then
    raise exception 'job % not found', p_job using errcode = 'PT404';
  end if;
  previous := job.status;
  if p_attempt is not null and p_attempt <> job.attempt then
    raise exception 'job % was claimed again (attempt % is not current %)', p_job, p_attempt, job.attempt using errcode = 'PT409';
  end if;
  allowed := (job.status, p_to) in (
    ('queued', 'parsing'), ('parsing', 'tokenizing'), ('tokenizing', 'embedding_request_sent'),
    ('embedding_request_sent', 'embedding_upserted'), ('embedding_upserted', 'ready'),
    ('queued', 'failed'), ('parsing', 'failed'), ('tokenizing', 'failed'), ('embedding_request_sent', 'failed'),
    ('failed', 'queued'));
  if not allowed then
    raise exception 'job % cannot go from % to %', p_job, job.status, p_to using errcode = 'PT409';
  end if;
  current := private.is_current_job(job);
  if not current and p_to in ('queued', 'parsing', 'ready') then
    raise exception 'job % was superseded by a newer job of reference %', p_job, job.reference_id using errcode = 'PT409';
  end if;
  update public.ingestion_jobs j set
    status = p_to,
    error_message = case when p_to = 'failed' then coalesce(p_error, 'failed') when p_to = 'queued' then null else j.error_message end,
    retry_count = j.retry_count + case when job.status = 'failed' and p_to = 'queued' then 1 else 0 end,
    attempt = j.attempt + case when p_to = 'parsing' then 1 else 0 end,
    locked_at = case when p_to in ('ready', 'failed', 'queued') then null else now() end,
    started_at = case when p_to = 'parsing' then now() else j.started_at end,
    finished_at = case when p_to in ('ready', 'failed') then now() when p_to = 'queued' then null else j.finished_at end,
    updated_at = now()
  where j.id = p_job
  returning * into job;
  insert into public.ingestion_audit (job_id, reference_id, from_status, to_status, error_message, details)
  values (job.id, job.reference_id, previous, p_to, p_error,
          p_details || case when current then '{}'::jsonb else '{"superseded": true}'::jsonb end);
  if p_to = 'failed' then
    delete from public.ingestion_staging where job_id = job.id;
    if current then
      update public.documents set status = 'failed', updated_at = now() where id = job.file_id and status <> 'ready';
      update public.curriculum_references
         set status = case when private.serves_version(job.file_id) then 'ready' else 'failed' end
       where id = job.reference_id and status = 'processing';
    end if;
  elsif p_to = 'queued' then
    update public.documents set status = 'processing', updated_at = now() where id = job.file_id and status <> 'ready';
    update public.curriculum_references set status = 'processing' where id = job.reference_id and status in ('failed', 'ready');
  elsif p_to = 'ready' then
    update public.documents set status = 'ready', ingestion_ts = now(), updated_at = now() where id = job.file_id;
    update public.curriculum_references set status = 'ready' where id = job.reference_id;
  end if;
  return job;
end;
$$;

-- why: dispatch and workers take the oldest queued job that is still its reference's current one (a
-- superseded one never runs); SKIP LOCKED lets any number of them run without ever taking the same job.
-- Null when nothing is queued. A claimer says whether it can recognize pages (p_can_ocr); the Node
-- process that serves next to functions (FUNCTIONS_RUNTIME=deno) takes only the jobs an Edge Function
-- left for a recognizer (p_deferred_only) and leaves every other queued job to its dispatch. A claim
-- starts the attempt's progress from zero.
create function public.claim_next_job(p_can_ocr boolean default true, p_deferred_only boolean default false) returns public.ingestion_jobs
language plpgsql security definer set search_path = '' as $$
declare
  next_id uuid;
  job public.ingestion_jobs;
begin
  select j.id into next_id from public.ingestion_jobs j
   where j.status = 'queued' and (p_can_ocr or not j.needs_ocr) and (not p_deferred_only or j.needs_ocr) and private.is_current_job(j)
   order by j.seq
   for update skip locked limit 1;
  if next_id is null then
    return null;
  end if;
  job := public.transition_job(next_id, 'parsing');
  update public.ingestion_jobs set pages_done = 0, pages_total = null, pages_ocr = 0 where id = next_id returning * into job;
  return job;
end;
$$;

-- why: a worker that died leaves its job in a running state; after p_stale_seconds without progress
-- the job fails with a clear error (a requeue then retries it, with a new attempt number).
create function public.reclaim_stale_jobs(p_stale_seconds integer) returns integer
language plpgsql security definer set search_path = '' as $$
declare
  stale record;
  n integer := 0;
begin
  for stale in
    select id from public.ingestion_jobs
     where status in ('parsing', 'tokenizing', 'embedding_request_sent')
       and locked_at < now() - make_interval(secs => p_stale_seconds)
     for update skip locked
  loop
    perform public.transition_job(stale.id, 'failed', null,
      format('worker stopped responding (no progress for more than %s s)', p_stale_seconds), '{"reclaimed": true}'::jsonb);
    n := n + 1;
  end loop;
  return n;
end;
$$;

-- why: every write of a running job goes through this first, in the same transaction: the job must still
-- be this attempt, running, current, and its document must exist. The row lock (share) makes a
-- concurrent cancel or reclaim wait for the write, and the write see the cancel.
create function public.check_job_attempt(p_job uuid, p_attempt integer) returns void
language plpgsql security definer set search_path = '' as $$
declare
  job public.ingestion_jobs;
begin
  select * into job from public.ingestion_jobs where id = p_job for share;
  if not found or job.attempt <> p_attempt or job.status not in ('parsing', 'tokenizing', 'embedding_request_sent')
     or not private.is_current_job(job) then
    raise exception 'job % attempt % is no longer running (cancelled, reclaimed or claimed again)', p_job, p_attempt using errcode = 'PT409';
  end if;
  if job.file_id is not null and not exists (select 1 from public.documents where id = job.file_id) then
    raise exception 'the document of job % was deleted', p_job using errcode = 'PT404';
  end if;
end;
$$;

-- why: progress of a running attempt; refused (PT409) once the attempt is not the job's current one.
-- It refreshes locked_at: a long OCR run is not taken for a dead worker.
create function public.report_job_progress(p_job uuid, p_attempt integer, p_done integer, p_total integer, p_ocr integer default null)
returns void
language plpgsql security definer set search_path = '' as $$
begin
  perform public.check_job_attempt(p_job, p_attempt);
  update public.ingestion_jobs
     set pages_done = greatest(0, p_done), pages_total = greatest(0, p_total), pages_ocr = case when p_ocr is null then pages_ocr else greatest(0, p_ocr) end,
         locked_at = now(), updated_at = now()
   where id = p_job;
end;
$$;

-- why: a running attempt that found pages to recognize and has no recognizer goes back to the queue,
-- marked, without counting as a retry; the audit says why.
create function public.defer_job_for_ocr(p_job uuid, p_attempt integer, p_pages integer)
returns public.ingestion_jobs
language plpgsql security definer set search_path = '' as $$
declare
  job public.ingestion_jobs;
  previous text;
begin
  perform public.check_job_attempt(p_job, p_attempt);
  select status into previous from public.ingestion_jobs where id = p_job;
  update public.ingestion_jobs
     set status = 'queued', needs_ocr = true, locked_at = null, pages_done = 0, pages_total = null, pages_ocr = 0, updated_at = now()
   where id = p_job
   returning * into job;
  delete from public.ingestion_staging where job_id = p_job;
  insert into public.ingestion_audit (job_id, reference_id, from_status, to_status, details)
  values (job.id, job.reference_id, previous, 'queued', jsonb_build_object('needs_ocr', true, 'pages', p_pages,
          'reason', 'pages without a readable text layer: left for a worker that can recognize them (npm run worker)'));
  return job;
end;
$$;

-- why: POST /admin/jobs/{job_id}/requeue. A failed job back to the queue (public.transition_job: 409
-- unless failed and current); one whose document was deleted meanwhile goes back without one, and
-- public.begin_ingestion gives it a new one when it starts.
create function public.requeue_job(p_job uuid) returns public.ingestion_jobs
language plpgsql security definer set search_path = '' as $$
declare
  job public.ingestion_jobs;
begin
  select * into job from public.ingestion_jobs where id = p_job for update;
  if found and job.status = 'failed' and job.file_id is not null
     and not exists (select 1 from public.documents d where d.id = job.file_id) then
    update public.ingestion_jobs set file_id = null where id = p_job;
  end if;
  return public.transition_job(p_job, 'queued', null, null, '{"trigger": "requeue"}'::jsonb);
end;
$$;

-- ---------------------------------------------------------------------------------------------------
-- The two ends of an ingestion, each one call: TypeScript downloads, reads, chunks and embeds; every row
-- of the document, the reference and the job is written here.

-- why: POST /admin/ingest/{reference_id}: a queued job and a document row in processing, nothing run.
-- With force, a job in flight is cancelled (failed, and fenced because the new job is newer) rather than
-- left to overwrite the new one; a document that serves a version keeps serving it until the new one
-- completes.
create function public.request_ingestion(p_reference uuid, p_force boolean default false)
returns public.ingestion_jobs
language plpgsql security definer set search_path = '' as $$
declare
  ref public.curriculum_references;
  active public.ingestion_jobs;
  doc_id uuid;
  job public.ingestion_jobs;
begin
  select * into ref from public.curriculum_references where id = p_reference for update;
  if not found then
    raise exception 'reference % not found', p_reference using errcode = 'PT404';
  end if;
  if ref.status = 'duplicate' then
    raise exception 'reference % is a duplicate of %', p_reference, ref.canonical_id using errcode = 'PT409';
  end if;
  -- locked: a job finishing right now is waited for, and then no longer active
  select * into active from public.ingestion_jobs
   where reference_id = p_reference and status not in ('ready', 'failed') order by seq desc limit 1 for update;
  if found and not (active.file_id is null and active.status = 'queued') and not p_force then
    raise exception 'reference % already has an active job %', p_reference, active.id using errcode = 'PT409';
  end if;
  if ref.status = 'ready' and not p_force then
    raise exception 'reference % is already ingested (use force to re-ingest)', p_reference using errcode = 'PT409';
  end if;
  -- the document of this reference, re-used on re-ingestion so chunk ids stay the same
  select id into doc_id from public.documents where reference_id = p_reference order by created_at limit 1;
  if doc_id is null then
    insert into public.documents (title, major, weight, category, grade, subject, language, reference_id, status, origin)
    values (ref.title, ref.major, ref.weight, ref.category, ref.grade, ref.subject, ref.language, ref.id, 'processing', 'reference')
    returning id into doc_id;
  else
    update public.documents set status = 'processing', updated_at = now() where id = doc_id and status <> 'ready';
  end if;
  if active.id is not null and active.file_id is null and active.status = 'queued' then
    -- the job the scraper queued: give it its document
    update public.ingestion_jobs set file_id = doc_id, updated_at = now() where id = active.id returning * into job;
  else
    insert into public.ingestion_jobs (reference_id, file_id) values (p_reference, doc_id) returning * into job;
    insert into public.ingestion_audit (job_id, reference_id, from_status, to_status, details)
    values (job.id, p_reference, null, 'queued', jsonb_build_object('trigger', 'ingest request', 'force', p_force));
    if active.id is not null then
      perform public.transition_job(active.id, 'failed', null, format('cancelled: superseded by job %s (forced re-ingestion)', job.id),
                                    jsonb_build_object('superseded_by', job.id, 'cancelled', true));
    end if;
  end if;
  update public.curriculum_references set status = 'processing' where id = p_reference;
  return job;
end;
$$;

-- why: step 1 of the pipeline (contract §4.8). A job the scraper queued has no document yet: it gets
-- one now, filled from its reference, processing, from the reference. Fenced like every write of a
-- running job (check_job_attempt), so a reclaimed or cancelled attempt creates nothing. Returns the job,
-- its file_id set.
create function public.begin_ingestion(p_job uuid, p_attempt integer) returns public.ingestion_jobs
language plpgsql security definer set search_path = '' as $$
declare
  job public.ingestion_jobs;
  ref public.curriculum_references;
  doc_id uuid;
begin
  perform public.check_job_attempt(p_job, p_attempt);
  select * into job from public.ingestion_jobs where id = p_job for update;
  if job.file_id is not null then
    return job;
  end if;
  select * into ref from public.curriculum_references where id = job.reference_id;
  insert into public.documents (title, major, weight, category, grade, subject, language, reference_id, status, origin)
  values (ref.title, ref.major, ref.weight, ref.category, ref.grade, ref.subject, ref.language, ref.id, 'processing', 'reference')
  returning id into doc_id;
  update public.ingestion_jobs set file_id = doc_id where id = p_job returning * into job;
  return job;
end;
$$;

-- why: the end of an ingestion, in one transaction: embedding_upserted, the staged version published
-- (chunk text and vectors upserted by their deterministic ids, what the new version no longer has
-- removed), the document and the reference synced, ready. A crash can therefore never leave a job
-- resting in embedding_upserted, nor a half-published document. A reference registered without a
-- language takes the one the pipeline detected (one that has one keeps it, as an operator may have set
-- it), and the document takes the reference's.
create function public.complete_ingestion(p_job uuid, p_attempt integer, p_index text, p_namespace text,
                                          p_page_count integer, p_details jsonb default '{}'::jsonb,
                                          p_language text default null)
returns public.ingestion_jobs
language plpgsql security definer set search_path = '' as $$
declare
  job public.ingestion_jobs;
  ref public.curriculum_references;
  n integer;
begin
  perform public.transition_job(p_job, 'embedding_upserted', p_attempt, null, p_details);
  select * into job from public.ingestion_jobs where id = p_job;
  perform 1 from public.documents where id = job.file_id for update;
  if not found then
    raise exception 'the document of job % was deleted', p_job using errcode = 'PT404';
  end if;
  update public.curriculum_references set language = p_language
   where id = job.reference_id and language is null and p_language is not null;
  select * into ref from public.curriculum_references where id = job.reference_id;
  select count(*) into n from public.ingestion_staging where job_id = p_job;

  insert into public.document_chunks (id, file_id, page_number, chunk_index, content, token_count)
  select s.id, s.file_id, s.page_number, s.chunk_index, s.content, s.token_count from public.ingestion_staging s where s.job_id = p_job
  on conflict (id) do update set content = excluded.content, token_count = excluded.token_count;
  delete from public.document_chunks c
   where c.file_id = job.file_id and not exists (select 1 from public.ingestion_staging s where s.job_id = p_job and s.id = c.id);
  insert into public.vectors (index_name, namespace, id, file_id, embedding, metadata)
  select p_index, p_namespace, s.id, s.file_id, s.embedding, s.metadata from public.ingestion_staging s where s.job_id = p_job
  on conflict (index_name, namespace, id) do update
    set embedding = excluded.embedding, metadata = excluded.metadata, file_id = excluded.file_id, updated_at = now();
  delete from public.vectors v
   where v.file_id = job.file_id
     and (v.index_name <> p_index or v.namespace <> p_namespace
          or not exists (select 1 from public.ingestion_staging s where s.job_id = p_job and s.id = v.id));
  delete from public.ingestion_staging where job_id = p_job;

  update public.documents set title = ref.title, major = ref.major, weight = ref.weight, category = ref.category,
         grade = ref.grade, subject = ref.subject, language = coalesce(ref.language, 'fr'), vectordb_index = p_index,
         vectordb_namespace = p_namespace, vectordb_vector_count = n, page_count = p_page_count, chunk_count = n, updated_at = now()
   where id = job.file_id;
  update public.curriculum_references set vectordb_index = p_index, vectordb_namespace = p_namespace, vectordb_vector_count = n
   where id = job.reference_id;
  update public.ingestion_jobs set chunks_created = n, vectors_upserted = n where id = p_job;
  return public.transition_job(p_job, 'ready', p_attempt, null, p_details);
end;
$$;

-- ---------------------------------------------------------------------------------------------------
-- The catalogue's state rules that meet the queue, each one transaction behind one call (TypeScript
-- orchestrates and calls).

-- why: the scraper's step 5 (contract §1.2). One registration at a time (an advisory lock), so two syncs
-- never make two canonical references for one document: a URL already known is 'known'; a fingerprint
-- within p_threshold of a stored one makes a 'duplicate' of that one's canonical reference (no job);
-- otherwise the reference is 'discovered' and, when it has a namespace (p_queue: the caller's check of
-- its grade and subject), gets a queued job and the job's first audit row ('new'), else waits for an
-- operator to set them ('needs_metadata'). A lesson filed under two grades (or two subjects) is a lesson
-- of each: a near-copy is a duplicate of a stored reference only when it does not file the text under
-- another grade and subject, that is when either of the two has no grade or subject (a copy that says
-- nothing adds nothing), or both name the same ones (a second edition of one grade's lesson).
create function public.register_reference(p_source text, p_pdf_source text, p_source_url text, p_title text, p_major text,
                                          p_weight integer, p_category text, p_grade text, p_subject text, p_language text,
                                          p_fingerprint bigint, p_run uuid, p_threshold integer, p_queue boolean,
                                          p_needs_ocr boolean default false, p_details jsonb default '{}'::jsonb)
returns table (outcome text, reference_id uuid, job_id uuid, canonical_id uuid)
language plpgsql security definer set search_path = '' as $$
begin
  perform pg_advisory_xact_lock(hashtextextended('catalogue:insert-reference', 0));
  select r.id into reference_id from public.curriculum_references r where r.source_url = p_source_url or r.pdf_source = p_pdf_source limit 1;
  if reference_id is not null then
    outcome := 'known';
    return next;
    return;
  end if;
  if p_fingerprint is not null then
    -- the nearest stored copy that files the text where this one would (the first discovered of equally near ones)
    select d.canonical_of into canonical_id
      from public.find_near_duplicates(p_fingerprint, p_threshold) d
      join public.curriculum_references c on c.id = d.canonical_of
     where not p_queue or c.grade is null or c.subject is null
        or (lower(c.grade) = lower(p_grade) and c.subject = p_subject)
     order by d.distance, d.discovered_at
     limit 1;
  end if;
  insert into public.curriculum_references (source, pdf_source, source_url, title, major, weight, category, grade, subject, language,
                                            status, content_fingerprint, canonical_id, scrape_run_id)
  values (p_source, p_pdf_source, p_source_url, p_title, p_major, coalesce(p_weight, 0), p_category, p_grade, p_subject, p_language,
          case when canonical_id is null then 'discovered' else 'duplicate' end, p_fingerprint, canonical_id, p_run)
  returning id into reference_id;
  if canonical_id is not null then
    outcome := 'duplicate';
  elsif not p_queue then
    outcome := 'needs_metadata';
  else
    insert into public.ingestion_jobs (reference_id, needs_ocr) values (reference_id, p_needs_ocr) returning id into job_id;
    insert into public.ingestion_audit (job_id, reference_id, source_url, from_status, to_status, details)
    values (job_id, reference_id, p_source_url, null, 'queued', coalesce(p_details, '{}'::jsonb));
    outcome := 'new';
  end if;
  return next;
end;
$$;

-- why: a reference whose file changed at its address. Its fingerprint and validators become the new
-- file's; a duplicate whose new text is no longer near a stored copy (filed where it would be) is a
-- reference on its own again; and a reference with a namespace gets a forced ingestion (a job in flight
-- is superseded, the served version stays until the new one is ready). One transaction, under the
-- registrations' lock so the duplicate decision sees every reference.
create function public.refresh_reference(p_reference uuid, p_fingerprint bigint, p_sha256 text, p_etag text, p_last_modified text,
                                         p_threshold integer, p_queue boolean, p_needs_ocr boolean default false,
                                         p_details jsonb default '{}'::jsonb)
returns table (outcome text, job_id uuid, canonical_id uuid)
language plpgsql security definer set search_path = '' as $$
declare
  ref public.curriculum_references;
  job public.ingestion_jobs;
begin
  perform pg_advisory_xact_lock(hashtextextended('catalogue:insert-reference', 0));
  select * into ref from public.curriculum_references r where r.id = p_reference for update;
  if not found then
    raise exception 'reference % not found', p_reference using errcode = 'PT404';
  end if;
  update public.curriculum_references
     set content_fingerprint = p_fingerprint, content_sha256 = p_sha256, etag = p_etag, last_modified = p_last_modified,
         fetched_at = now(), last_checked_at = now()
   where id = p_reference;
  if ref.status = 'duplicate' then
    if p_fingerprint is not null then
      select d.canonical_of into canonical_id
        from public.find_near_duplicates(p_fingerprint, p_threshold) d
        join public.curriculum_references c on c.id = d.canonical_of
       where d.id <> p_reference and d.canonical_of <> p_reference
         and (not p_queue or c.grade is null or c.subject is null or (lower(c.grade) = lower(ref.grade) and c.subject = ref.subject))
       order by d.distance, d.discovered_at
       limit 1;
    end if;
    if canonical_id is not null then
      update public.curriculum_references r set canonical_id = refresh_reference.canonical_id where r.id = p_reference;
      outcome := 'duplicate';
      return next;
      return;
    end if;
    update public.curriculum_references set status = 'discovered', canonical_id = null where id = p_reference;
  end if;
  outcome := 'changed';
  if p_queue then
    job := public.request_ingestion(p_reference, true);
    update public.ingestion_jobs set needs_ocr = p_needs_ocr where id = job.id;
    update public.ingestion_audit a
       set details = a.details || coalesce(p_details, '{}'::jsonb) || jsonb_build_object('trigger', 'file changed at its address')
     where a.job_id = job.id and a.from_status is null;
    job_id := job.id;
  end if;
  return next;
end;
$$;

-- why: an operator's fix of a reference's metadata. The fields of p_patch that differ are applied to the
-- reference and to its document (which mirrors it), with the before and after of each in the ingestion
-- audit, in one transaction; the changes ({field: {from, to}}) are returned. Grade, subject and
-- language are what an ingested version's vectors carry: changing one is a conflict (PT409, the job or
-- document in the detail) while a job of the reference has started (it read them) or a document of it
-- is ready; a job still queued reads the new ones when it starts.
create function public.update_reference_metadata(p_reference uuid, p_patch jsonb, p_by text, p_request_id text)
returns jsonb
language plpgsql security definer set search_path = '' as $$
declare
  ref public.curriculum_references;
  before jsonb;
  field text;
  v_changes jsonb := '{}'::jsonb;
  started record;
  doc record;
begin
  -- the reference's row lock orders this after (or before) an ingest request for it
  select * into ref from public.curriculum_references where id = p_reference for update;
  if not found then
    raise exception 'Unknown reference' using errcode = 'PT404';
  end if;
  before := to_jsonb(ref);
  foreach field in array array['title', 'grade', 'subject', 'language', 'category', 'major', 'weight'] loop
    if p_patch ? field and p_patch -> field is distinct from before -> field then
      v_changes := v_changes || jsonb_build_object(field, jsonb_build_object('from', before -> field, 'to', p_patch -> field));
    end if;
  end loop;
  if v_changes = '{}'::jsonb then
    return v_changes;
  end if;
  if v_changes ?| array['grade', 'subject', 'language'] then
    -- locked: a claim skips a locked queued job, and a claim under way is waited for and then seen
    perform 1 from public.ingestion_jobs j where j.reference_id = p_reference and j.status not in ('ready', 'failed') for update;
    select j.id, j.status into started from public.ingestion_jobs j
     where j.reference_id = p_reference and j.status not in ('ready', 'failed', 'queued') order by j.seq desc limit 1;
    if found then
      raise exception 'reference % is being ingested (job % is %) with its current grade, subject and language; change them once the job is ready or failed',
        p_reference, started.id, started.status
        using errcode = 'PT409', detail = jsonb_build_object('reference_id', p_reference, 'job_id', started.id)::text;
    end if;
    select d.id, d.vectordb_namespace into doc from public.documents d where d.reference_id = p_reference and d.status = 'ready' limit 1;
    if found then
      raise exception 'reference % has an ingested document % (namespace %) whose vectors carry its grade, subject and language; delete the document first (DELETE /admin/documents/%), then change them and ingest the reference again',
        p_reference, doc.id, coalesce(doc.vectordb_namespace, 'null'), doc.id
        using errcode = 'PT409', detail = jsonb_build_object('reference_id', p_reference, 'document_id', doc.id)::text;
    end if;
  end if;
  update public.curriculum_references r
     set title = case when v_changes ? 'title' then p_patch ->> 'title' else r.title end,
         grade = case when v_changes ? 'grade' then p_patch ->> 'grade' else r.grade end,
         subject = case when v_changes ? 'subject' then p_patch ->> 'subject' else r.subject end,
         language = case when v_changes ? 'language' then p_patch ->> 'language' else r.language end,
         category = case when v_changes ? 'category' then p_patch ->> 'category' else r.category end,
         major = case when v_changes ? 'major' then p_patch ->> 'major' else r.major end,
         weight = case when v_changes ? 'weight' then (p_patch ->> 'weight')::integer else r.weight end
   where r.id = p_reference
  returning * into ref;
  -- with a grade, subject or language change no document of the reference is ready (checked above)
  update public.documents d
     set title = case when v_changes ? 'title' then ref.title else d.title end,
         grade = case when v_changes ? 'grade' then ref.grade else d.grade end,
         subject = case when v_changes ? 'subject' then ref.subject else d.subject end,
         language = case when v_changes ? 'language' then ref.language else d.language end,
         category = case when v_changes ? 'category' then ref.category else d.category end,
         major = case when v_changes ? 'major' then ref.major else d.major end,
         weight = case when v_changes ? 'weight' then ref.weight else d.weight end,
         updated_at = now()
   where d.reference_id = p_reference;
  insert into public.ingestion_audit (reference_id, source_url, from_status, to_status, details)
  values (p_reference, ref.source_url, ref.status, ref.status,
          jsonb_build_object('trigger', 'reference update', 'changes', v_changes, 'by', p_by, 'request_id', p_request_id));
  return v_changes;
end;
$$;

-- why: a document's deletion, the contract's five steps in order in one transaction (§4.7): read it (and
-- lock it), its vectors by file id and namespace, its chunks, the row, and its reference back to
-- 'discovered' without vector metadata. No row when the document does not exist. First the jobs of the
-- document in flight are cancelled (failed, saying why): left alone they would keep the reference from
-- being ingested again and then fail on the missing document. Their rows are locked first, as a worker's
-- transaction locks the job before the document, so a deletion and a completing job wait for each other
-- rather than deadlock; a worker of a cancelled job stops at its next write (its attempt is no longer
-- running).
create function public.delete_document(p_document uuid)
returns table (status text, chunks_removed integer, vectors_removed integer, reference_id uuid)
language plpgsql security definer set search_path = '' as $$
declare
  doc public.documents;
  active record;
begin
  for active in
    select j.id from public.ingestion_jobs j
     where j.file_id = p_document and j.status in ('queued', 'parsing', 'tokenizing', 'embedding_request_sent')
     order by j.seq for update
  loop
    perform public.transition_job(active.id, 'failed', null, 'cancelled: its document was deleted',
                                  jsonb_build_object('cancelled', true, 'trigger', 'document deleted'));
  end loop;
  select * into doc from public.documents d where d.id = p_document for update;                                   -- 1.
  if not found then
    return;
  end if;
  delete from public.vectors v where v.file_id = p_document and (doc.vectordb_namespace is null or v.namespace = doc.vectordb_namespace); -- 2.
  get diagnostics vectors_removed = row_count;
  delete from public.document_chunks c where c.file_id = p_document;                                               -- 3.
  get diagnostics chunks_removed = row_count;
  delete from public.documents d where d.id = p_document;                                                          -- 4.
  if doc.reference_id is not null then                                                                             -- 5.
    update public.curriculum_references r
       set status = 'discovered', vectordb_index = null, vectordb_namespace = null, vectordb_vector_count = null
     where r.id = doc.reference_id;
  end if;
  status := 'deleted';
  reference_id := doc.reference_id;
  return next;
end;
$$;

-- ---------------------------------------------------------------------------------------------------
-- A manual upload is a document no student sees until every chunk and its vector are stored. It
-- starts processing, takes its chunks (each with its vector, in the document's index and namespace) in
-- batches, and is published ready with its counts, all in the caller's one transaction.

create function public.begin_upload(p_document uuid, p_grade text, p_subject text, p_language text, p_index text, p_namespace text, p_page_count integer)
returns void
language sql security definer set search_path = '' as $$
  insert into public.documents (id, grade, subject, language, status, origin, vectordb_index, vectordb_namespace, page_count)
  values (p_document, p_grade, p_subject, p_language, 'processing', 'upload', p_index, p_namespace, p_page_count)
$$;

-- p_chunks: [{id, page_number, chunk_index, content, embedding (a vector literal), metadata}]
create function public.stage_upload_chunks(p_document uuid, p_chunks jsonb)
returns integer
language plpgsql security definer set search_path = '' as $$
declare
  doc public.documents;
  n integer;
begin
  select * into doc from public.documents where id = p_document for update;
  if not found or doc.origin <> 'upload' or doc.status <> 'processing' then
    raise exception 'document % is not an upload in progress', p_document using errcode = 'PT409';
  end if;
  insert into public.document_chunks (id, file_id, page_number, chunk_index, content)
  select c ->> 'id', p_document, (c ->> 'page_number')::integer, (c ->> 'chunk_index')::integer, c ->> 'content'
    from jsonb_array_elements(p_chunks) c;
  get diagnostics n = row_count;
  insert into public.vectors (index_name, namespace, id, file_id, embedding, metadata)
  select doc.vectordb_index, doc.vectordb_namespace, c ->> 'id', p_document, (c ->> 'embedding')::extensions.vector, c -> 'metadata'
    from jsonb_array_elements(p_chunks) c;
  return n;
end;
$$;

create function public.publish_upload(p_document uuid)
returns public.documents
language plpgsql security definer set search_path = '' as $$
declare
  doc public.documents;
  chunks integer;
  vectors integer;
begin
  select * into doc from public.documents where id = p_document for update;
  if not found or doc.origin <> 'upload' or doc.status <> 'processing' then
    raise exception 'document % is not an upload in progress', p_document using errcode = 'PT409';
  end if;
  select count(*) into chunks from public.document_chunks where file_id = p_document;
  select count(*) into vectors from public.vectors where file_id = p_document;
  if chunks = 0 or chunks <> vectors then
    raise exception 'upload % has % chunks and % vectors: it is published with one vector per chunk, at least one', p_document, chunks, vectors
      using errcode = 'PT409';
  end if;
  update public.documents
     set status = 'ready', chunk_count = chunks, vectordb_vector_count = vectors, ingestion_ts = now(), updated_at = now()
   where id = p_document
  returning * into doc;
  return doc;
end;
$$;
