-- A lesson filed under two grades (or two subjects) is a lesson of each. A portal links one file, or a
-- copy of it, under 5AS and under 6AS; the second was registered as a duplicate of the first, without a
-- job, and a student of 6AS (whose questions are searched in 6AS's lessons only) never found it.
-- Now a near-copy is a duplicate of a stored reference only when it does not file the text under another
-- grade and subject: when either of the two has no grade or subject (a copy that says nothing adds
-- nothing), or both name the same ones (a second edition of one grade's lesson). Otherwise it is
-- registered on its own, 'discovered', with its job. Everything else is as in 20261123000700.
create or replace function public.register_reference(p_source text, p_pdf_source text, p_source_url text, p_title text, p_major text,
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
