-- The two ends of an ingestion in SQL, each one call: its start (the document of a job the scraper
-- queued) and its completion with the language the pipeline detected. TypeScript downloads, reads,
-- chunks and embeds; every row of the document, the reference and the job is written here.

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

-- why: the end of an ingestion, now also given the language the pipeline detected: a reference
-- registered without one takes it (one that has one keeps it, as an operator may have set it), and the
-- document takes the reference's, written once. Same one transaction as before: embedding_upserted,
-- the staged version published, the document and the reference synced, the job ready.
drop function public.complete_ingestion(uuid, integer, text, text, integer, jsonb);
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

revoke all on function public.begin_ingestion(uuid, integer), public.complete_ingestion(uuid, integer, text, text, integer, jsonb, text)
  from public, anon, authenticated;
grant execute on function public.begin_ingestion(uuid, integer), public.complete_ingestion(uuid, integer, text, text, integer, jsonb, text)
  to service_role;
