-- Documents, their chunks and vectors, and the ingestion job state machine (spec §2.2-§2.6, §3.1-§3.3).

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

-- why: chunk text lives here, read by id at answer time; vector metadata carries only light fields.
create table public.document_chunks (
  id text primary key, -- sha256 of file_id:page_number:chunk_index
  file_id uuid not null references public.documents (id) on delete cascade,
  page_number integer not null check (page_number >= 1),
  chunk_index integer not null check (chunk_index >= 0),
  content text not null,
  token_count integer,
  created_at timestamptz not null default now(),
  unique (file_id, page_number, chunk_index)
);

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

alter table public.documents enable row level security;
alter table public.document_chunks enable row level security;
alter table public.vectors enable row level security;
revoke all on public.documents, public.document_chunks, public.vectors from anon, authenticated;
grant all on public.documents, public.document_chunks, public.vectors to service_role;

-- Jobs: a claim counter fences stale workers, locked_at finds abandoned runs.
alter table public.ingestion_jobs add column attempt integer not null default 0;
alter table public.ingestion_jobs add column locked_at timestamptz;
alter table public.ingestion_jobs add column started_at timestamptz;
alter table public.ingestion_jobs add column finished_at timestamptz;
-- creation order, exact even inside one transaction (where now() does not move): the claim order
alter table public.ingestion_jobs add column seq bigint generated always as identity;
create index ingestion_jobs_queued_idx on public.ingestion_jobs (seq) where status = 'queued';

-- why: the only way a job changes state. It allows exactly the transitions of spec §3.1, writes the
-- audit row in the same transaction, keeps the document and the reference in step, and refuses an
-- update from a worker whose claim is not the job's current one (p_attempt).
create function public.transition_job(p_job uuid, p_to text, p_attempt integer default null,
                                      p_error text default null, p_details jsonb default '{}'::jsonb)
returns public.ingestion_jobs
language plpgsql security definer set search_path = '' as $$
declare
  job public.ingestion_jobs;
  previous text;
  allowed boolean;
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
  values (job.id, job.reference_id, previous, p_to, p_error, p_details);
  if p_to = 'failed' then
    update public.documents set status = 'failed', updated_at = now() where id = job.file_id;
    update public.curriculum_references set status = 'failed' where id = job.reference_id and status = 'processing';
  elsif p_to = 'queued' then
    update public.documents set status = 'processing', updated_at = now() where id = job.file_id;
    update public.curriculum_references set status = 'processing' where id = job.reference_id and status = 'failed';
  elsif p_to = 'ready' then
    update public.documents set status = 'ready', ingestion_ts = now(), updated_at = now() where id = job.file_id;
    update public.curriculum_references set status = 'ready' where id = job.reference_id;
  end if;
  return job;
end;
$$;

-- why: dispatch and workers take the oldest queued job; SKIP LOCKED lets any number of them run without
-- ever taking the same job. Null when nothing is queued.
create function public.claim_next_job() returns public.ingestion_jobs
language plpgsql security definer set search_path = '' as $$
declare
  next_id uuid;
begin
  select id into next_id from public.ingestion_jobs
   where status = 'queued' order by seq
   for update skip locked limit 1;
  if next_id is null then
    return null;
  end if;
  return public.transition_job(next_id, 'parsing');
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

-- why: POST /admin/ingest/{reference_id}: a queued job and a document row in processing, nothing run.
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
  select * into active from public.ingestion_jobs
   where reference_id = p_reference and status not in ('ready', 'failed') order by created_at desc limit 1;
  if found and active.file_id is not null then
    if not p_force then
      raise exception 'reference % already has an active job %', p_reference, active.id using errcode = 'PT409';
    end if;
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
    update public.documents set status = 'processing', updated_at = now() where id = doc_id;
  end if;
  if active.id is not null and active.file_id is null then
    -- the job the scraper queued: give it its document
    update public.ingestion_jobs set file_id = doc_id, updated_at = now() where id = active.id returning * into job;
  else
    insert into public.ingestion_jobs (reference_id, file_id) values (p_reference, doc_id) returning * into job;
    insert into public.ingestion_audit (job_id, reference_id, from_status, to_status, details)
    values (job.id, p_reference, null, 'queued', jsonb_build_object('trigger', 'ingest request', 'force', p_force));
  end if;
  update public.curriculum_references set status = 'processing' where id = p_reference;
  return job;
end;
$$;

revoke all on function public.transition_job(uuid, text, integer, text, jsonb), public.claim_next_job(),
  public.reclaim_stale_jobs(integer), public.request_ingestion(uuid, boolean) from public, anon, authenticated;
grant execute on function public.transition_job(uuid, text, integer, text, jsonb), public.claim_next_job(),
  public.reclaim_stale_jobs(integer), public.request_ingestion(uuid, boolean) to service_role;
