-- The remaining state rules of the catalogue in SQL, each one transaction behind one call (TypeScript
-- orchestrates and calls): a reference's registration with its duplicate decision, job and audit, and a
-- document's deletion.

-- why: the scraper's step 5 (contract §1.2). One registration at a time (an advisory lock), so two syncs
-- never make two canonical references for one document: a URL already known is 'known'; a fingerprint
-- within p_threshold of a stored one makes a 'duplicate' of that one's canonical reference (no job);
-- otherwise the reference is 'discovered' and, when it has a namespace (p_queue: the caller's check of
-- its grade and subject), gets a queued job and the job's first audit row ('new'), else waits for an
-- operator to set them ('needs_metadata').
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
    select d.canonical_of into canonical_id from public.find_near_duplicates(p_fingerprint, p_threshold) d limit 1;
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

-- why: a document's deletion, the contract's five steps in order in one transaction (§4.7): read it (and
-- lock it), its vectors by file id and namespace, its chunks, the row, and its reference back to
-- 'discovered' without vector metadata. No row when the document does not exist.
create function public.delete_document(p_document uuid)
returns table (status text, chunks_removed integer, vectors_removed integer, reference_id uuid)
language plpgsql security definer set search_path = '' as $$
declare
  doc public.documents;
begin
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

revoke all on function public.register_reference(text, text, text, text, text, integer, text, text, text, text, bigint, uuid, integer, boolean, boolean, jsonb),
  public.delete_document(uuid) from public, anon, authenticated;
grant execute on function public.register_reference(text, text, text, text, text, integer, text, text, text, text, bigint, uuid, integer, boolean, boolean, jsonb),
  public.delete_document(uuid) to service_role;
