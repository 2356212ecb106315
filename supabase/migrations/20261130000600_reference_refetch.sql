-- A PDF that changes at an address already known is fetched again. Each reference keeps what its last
-- download looked like: the SHA-256 of its bytes and the validators the server gave (ETag,
-- Last-Modified), sent back as a conditional request when a sync checks it again. A file whose text
-- changed becomes a new ingestion of the same reference: its document keeps serving the version it has
-- until the new one completes, and complete_ingestion swaps chunks and vectors in one transaction.

alter table public.curriculum_references
  add column content_sha256 text check (content_sha256 ~ '^[0-9a-f]{64}$'),
  add column etag text,
  add column last_modified text,
  add column fetched_at timestamptz;

comment on column public.curriculum_references.fetched_at is
  'When the file was last downloaded or confirmed unchanged (a 304 or the same bytes): a sync checks it again once REFETCH_AFTER_SECONDS have passed';

alter table public.scrape_runs add column changed_count integer not null default 0 check (changed_count >= 0);

-- why: what a download of a reference's file looked like, written after its registration and after each
-- check that found it unchanged; a 304 keeps the validators it does not replace.
create function public.record_reference_fetch(p_reference uuid, p_sha256 text, p_etag text, p_last_modified text)
returns void
language sql security definer set search_path = '' as $$
  update public.curriculum_references
     set content_sha256 = coalesce(p_sha256, content_sha256), etag = coalesce(p_etag, etag),
         last_modified = coalesce(p_last_modified, last_modified), fetched_at = now(), last_checked_at = now()
   where id = p_reference
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

revoke all on function public.record_reference_fetch(uuid, text, text, text),
  public.refresh_reference(uuid, bigint, text, text, text, integer, boolean, boolean, jsonb) from public, anon, authenticated;
grant execute on function public.record_reference_fetch(uuid, text, text, text),
  public.refresh_reference(uuid, bigint, text, text, text, integer, boolean, boolean, jsonb) to service_role;
