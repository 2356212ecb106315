-- A deleted document takes its ingestion in flight with it. Its reference goes back to 'discovered'
-- (contract §4.7), so a job still queued or running for the document is cancelled in the same
-- transaction (failed, saying why): left alone it kept the reference from being ingested again (409,
-- "already has an active job") and then failed on the missing document. A requeue of a job whose
-- document is gone starts it on a new document, as a job the scraper queued, instead of failing on the
-- missing one again at every requeue.

-- why: the five steps of 20261123000700, after the jobs of the document in flight are cancelled. Their
-- rows are locked first, as a worker's transaction locks the job before the document, so a deletion and
-- a completing job wait for each other rather than deadlock; a worker of a cancelled job stops at its
-- next write (its attempt is no longer running).
create or replace function public.delete_document(p_document uuid)
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

revoke all on function public.requeue_job(uuid) from public, anon, authenticated;
grant execute on function public.requeue_job(uuid) to service_role;
