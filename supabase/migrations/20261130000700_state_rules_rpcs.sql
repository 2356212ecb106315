-- The state rules the service still wrote in TypeScript, as RPCs: a scrape run's lifecycle (one running
-- run per source, heartbeats only while running, a final status at the end), an operator's change of a
-- reference's metadata (grade, subject and language are frozen while a job of the reference has started
-- or a document of it is ready), and a manual upload (a document invisible until all its chunks and
-- their vectors are stored, then ready in the same transaction).

-- why: a source has one running run at a time (scrape_runs_one_running_idx). A new run's id, or the run
-- already running (none when it ended in between: the caller may try again).
create function public.start_scrape_run(p_source text, p_at timestamptz)
returns table (run_id uuid, running_id uuid, running_started_at timestamptz, running_heartbeat_at timestamptz)
language plpgsql security definer set search_path = '' as $$
begin
  insert into public.scrape_runs (source, heartbeat_at) values (p_source, p_at) returning id into run_id;
  return next;
exception when unique_violation then
  return query select null::uuid, r.id, r.started_at, r.heartbeat_at from public.scrape_runs r where r.source = p_source and r.status = 'running';
end;
$$;

-- why: a run's progress while it runs; a run already closed (as abandoned) is not reopened by a late
-- heartbeat. False when nothing was written.
create function public.heartbeat_scrape_run(p_run uuid, p_at timestamptz, p_found integer, p_new integer, p_duplicates integer,
                                            p_quality_failed integer, p_errors integer, p_changed integer)
returns boolean
language sql security definer set search_path = '' as $$
  with touched as (
    update public.scrape_runs
       set heartbeat_at = p_at, found_count = p_found, new_count = p_new, duplicate_count = p_duplicates,
           quality_failed_count = p_quality_failed, error_count = p_errors, changed_count = p_changed
     where id = p_run and status = 'running'
    returning 1
  )
  select exists (select 1 from touched)
$$;

-- why: the outcome a run reached, written whatever its status (a run closed as abandoned while it was
-- alive after all gets the outcome it reached); only a final status ends a run.
create function public.finish_scrape_run(p_run uuid, p_status text, p_at timestamptz, p_found integer, p_new integer, p_duplicates integer,
                                         p_quality_failed integer, p_errors integer, p_changed integer, p_error_message text)
returns void
language plpgsql security definer set search_path = '' as $$
begin
  if p_status not in ('completed', 'failed', 'interrupted') then
    raise exception 'a run ends completed, failed or interrupted, not %', p_status using errcode = 'PT400';
  end if;
  update public.scrape_runs
     set status = p_status, found_count = p_found, new_count = p_new, duplicate_count = p_duplicates, quality_failed_count = p_quality_failed,
         error_count = p_errors, changed_count = p_changed, error_message = p_error_message, finished_at = now(), heartbeat_at = p_at
   where id = p_run;
  if not found then
    raise exception 'scrape run % not found', p_run using errcode = 'PT404';
  end if;
end;
$$;

-- why: an operator's fix of a reference's metadata. The fields of p_patch that differ are applied to the
-- reference and to its document (which mirrors it), with the before and after of each in the ingestion
-- audit, in one transaction; the changes ({field: {from, to}}) are returned. Grade, subject and language are what an ingested version's vectors carry:
-- changing one is a conflict (PT409, the job or document in the detail) while a job of the reference has
-- started (it read them) or a document of it is ready; a job still queued reads the new ones when it starts.
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

-- why: a manual upload is a document no student sees until every chunk and its vector are stored. It
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

-- Like every function created after the default-deny migration, these are callable by service_role only.
