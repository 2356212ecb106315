-- Scanned pages and progress. A job reports pages done / total while its pages are read (OCR takes
-- seconds a page), which also tells reclaim_stale_jobs that its worker is alive. A job whose PDF needs
-- the recognizer, where none runs (Edge Functions), is put back in the queue marked needs_ocr, and only
-- a claimer that can recognize (a Node worker) takes it.

alter table public.ingestion_jobs add column needs_ocr boolean not null default false;
alter table public.ingestion_jobs add column pages_total integer check (pages_total >= 0);
alter table public.ingestion_jobs add column pages_done integer not null default 0 check (pages_done >= 0);
alter table public.ingestion_jobs add column pages_ocr integer not null default 0 check (pages_ocr >= 0);
comment on column public.ingestion_jobs.pages_total is 'pages being read by the current attempt (null before its pages are counted)';
comment on column public.ingestion_jobs.pages_ocr is 'pages of the current attempt whose text came from the recognizer (OCR)';

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

-- why: the claim of 20261122000800, for claimers that say whether they can recognize pages.
-- A claim starts the attempt's progress from zero.
drop function public.claim_next_job();
create function public.claim_next_job(p_can_ocr boolean default true) returns public.ingestion_jobs
language plpgsql security definer set search_path = '' as $$
declare
  next_id uuid;
  job public.ingestion_jobs;
begin
  select j.id into next_id from public.ingestion_jobs j
   where j.status = 'queued' and (p_can_ocr or not j.needs_ocr) and private.is_current_job(j) order by j.seq
   for update skip locked limit 1;
  if next_id is null then
    return null;
  end if;
  job := public.transition_job(next_id, 'parsing');
  update public.ingestion_jobs set pages_done = 0, pages_total = null, pages_ocr = 0 where id = next_id returning * into job;
  return job;
end;
$$;

revoke all on function public.report_job_progress(uuid, integer, integer, integer, integer), public.defer_job_for_ocr(uuid, integer, integer),
  public.claim_next_job(boolean) from public, anon, authenticated;
grant execute on function public.report_job_progress(uuid, integer, integer, integer, integer), public.defer_job_for_ocr(uuid, integer, integer),
  public.claim_next_job(boolean) to service_role;
