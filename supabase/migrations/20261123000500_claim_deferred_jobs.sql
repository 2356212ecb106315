-- A claimer that takes only the jobs an Edge Function left for a recognizer (needs_ocr): the Node process
-- that serves next to functions (FUNCTIONS_RUNTIME=deno) runs those and leaves every other queued job to
-- its dispatch, as the Node gateway alone would.
drop function public.claim_next_job(boolean);
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

revoke all on function public.claim_next_job(boolean, boolean) from public, anon, authenticated;
grant execute on function public.claim_next_job(boolean, boolean) to service_role;
