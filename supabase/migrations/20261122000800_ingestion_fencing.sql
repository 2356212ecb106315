-- Ingestion attempts that cannot damage what is served. A job is the *current* one of its reference when
-- no newer job exists for that reference; only the current job may change the reference and its
-- document. A new ingestion stages its chunks and vectors aside and publishes them in one transaction
-- at the end, so the catalogue always serves the latest version that completed: a crashed, reclaimed,
-- cancelled or failed attempt leaves the previous version untouched. A forced re-ingestion cancels the
-- job in flight and fences it (its worker's next write is refused).

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
alter table public.ingestion_staging enable row level security;
revoke all on public.ingestion_staging from anon, authenticated;
grant all on public.ingestion_staging to service_role;

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

-- The state machine of 20261122000600, fenced: a job that is not current cannot be requeued or become
-- ready, and its failure changes neither the document nor the reference. A failure drops the job's
-- staged rows; a document that serves an earlier version keeps serving it (and its reference stays
-- ready); a requeue or a claim leaves a served document ready.
create or replace function public.transition_job(p_job uuid, p_to text, p_attempt integer default null,
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

-- why: the end of an ingestion, in one transaction: embedding_upserted, the staged version published
-- (chunk text and vectors upserted by their deterministic ids, what the new version no longer has
-- removed), the document and the reference synced, ready. A crash can therefore never leave a job
-- resting in embedding_upserted, nor a half-published document.
create function public.complete_ingestion(p_job uuid, p_attempt integer, p_index text, p_namespace text,
                                          p_page_count integer, p_details jsonb default '{}'::jsonb)
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

-- why: POST /admin/ingest/{reference_id}, fenced: with force, a job in flight is cancelled (failed, and
-- fenced because the new job is newer) rather than left to overwrite the new one; a document that serves
-- a version keeps serving it until the new one completes.
create or replace function public.request_ingestion(p_reference uuid, p_force boolean default false)
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

-- why: the oldest queued job that is still its reference's current one (a superseded one never runs).
create or replace function public.claim_next_job() returns public.ingestion_jobs
language plpgsql security definer set search_path = '' as $$
declare
  next_id uuid;
begin
  select j.id into next_id from public.ingestion_jobs j
   where j.status = 'queued' and private.is_current_job(j) order by j.seq
   for update skip locked limit 1;
  if next_id is null then
    return null;
  end if;
  return public.transition_job(next_id, 'parsing');
end;
$$;

revoke all on function private.is_current_job(public.ingestion_jobs), private.serves_version(uuid) from public, anon, authenticated;
revoke all on function public.check_job_attempt(uuid, integer), public.complete_ingestion(uuid, integer, text, text, integer, jsonb)
  from public, anon, authenticated;
grant execute on function public.check_job_attempt(uuid, integer), public.complete_ingestion(uuid, integer, text, text, integer, jsonb)
  to service_role;
