-- The curriculum catalogue's discovery side: scrape runs and the references they find, with the SimHash
-- fingerprint that decides near-duplicates and what each file's last download looked like. Where a
-- reference meets the ingestion queue (its registration with a job, a changed file's re-ingestion, a
-- change of its metadata) is in 20261101000600_ingestion.sql, after the queue.

-- why: one row per sync of a source, with what it found. A sync refreshes its run's heartbeat_at, with its
-- counts so far, at each listing page and each link it is done with, so that a run whose process died
-- (an Edge Function stopped at its wall clock, a server killed) can be told from a long one: a run still
-- running whose heartbeat is older than SCRAPE_RUN_STALE_SECONDS is closed as failed, saying so. A sync
-- that its process's shutdown stops closes its run as interrupted, with the counts of what it did.
create table public.scrape_runs (
  id uuid primary key default gen_random_uuid(),
  source text not null,
  status text not null default 'running' check (status in ('running', 'completed', 'failed', 'interrupted')),
  found_count integer not null default 0,
  new_count integer not null default 0,
  duplicate_count integer not null default 0,
  quality_failed_count integer not null default 0,
  error_count integer not null default 0,
  error_message text,
  started_at timestamptz not null default now(),
  finished_at timestamptz,
  heartbeat_at timestamptz not null default now(),
  changed_count integer not null default 0 check (changed_count >= 0)
);
comment on column public.scrape_runs.heartbeat_at is 'the last progress of the run (a listing page or a link done), written by its sync with its counts so far';
create index scrape_runs_source_started_idx on public.scrape_runs (source, started_at desc);
create index scrape_runs_running_heartbeat_idx on public.scrape_runs (heartbeat_at) where status = 'running';
-- two syncs of one source at once (two admins, or an admin and a schedule) would download, read and
-- register the same links, their counts split between two runs: the service answers 409 naming the run
-- that is running
create unique index scrape_runs_one_running_idx on public.scrape_runs (source) where status = 'running';
comment on index public.scrape_runs_one_running_idx is 'at most one running run per source: a second sync of a source is refused while one runs';

-- why: a discovered curriculum PDF. `references` is an SQL keyword, hence the name.
-- content_fingerprint is the 64-bit SimHash of the canonical text (as a signed bigint); its four 16-bit
-- blocks are stored and indexed for the pigeonhole lookup below. A PDF that changes at an address already
-- known is fetched again: the reference keeps what its last download looked like (the SHA-256 of its
-- bytes and the validators the server gave, ETag and Last-Modified), sent back as a conditional request
-- when a sync checks it again.
create table public.curriculum_references (
  id uuid primary key default gen_random_uuid(),
  source text not null,
  pdf_source text not null,
  source_url text not null unique,
  title text,
  major text,
  weight integer not null default 0,
  category text,
  grade text,
  subject text,
  language text,
  status text not null default 'discovered' check (status in ('discovered', 'processing', 'ready', 'failed', 'duplicate')),
  content_fingerprint bigint,
  fp_block0 integer generated always as ((content_fingerprint & 65535)::integer) stored,
  fp_block1 integer generated always as (((content_fingerprint >> 16) & 65535)::integer) stored,
  fp_block2 integer generated always as (((content_fingerprint >> 32) & 65535)::integer) stored,
  fp_block3 integer generated always as (((content_fingerprint >> 48) & 65535)::integer) stored,
  canonical_id uuid references public.curriculum_references (id) on delete set null,
  vectordb_index text,
  vectordb_namespace text,
  vectordb_vector_count integer,
  scrape_run_id uuid references public.scrape_runs (id) on delete set null,
  discovered_at timestamptz not null default now(),
  last_checked_at timestamptz not null default now(),
  content_sha256 text check (content_sha256 ~ '^[0-9a-f]{64}$'),
  etag text,
  last_modified text,
  fetched_at timestamptz,
  check ((status = 'duplicate') = (canonical_id is not null))
);
comment on column public.curriculum_references.fetched_at is
  'When the file was last downloaded or confirmed unchanged (a 304 or the same bytes): a sync checks it again once REFETCH_AFTER_SECONDS have passed';
create index curriculum_references_fingerprint_idx on public.curriculum_references (content_fingerprint);
create index curriculum_references_block0_idx on public.curriculum_references (fp_block0);
create index curriculum_references_block1_idx on public.curriculum_references (fp_block1);
create index curriculum_references_block2_idx on public.curriculum_references (fp_block2);
create index curriculum_references_block3_idx on public.curriculum_references (fp_block3);
create index curriculum_references_source_status_idx on public.curriculum_references (source, status, discovered_at desc);
create index curriculum_references_status_idx on public.curriculum_references (status, discovered_at desc);

-- RLS (spec §5.7): admins (private.is_admin) read and write; the public listings are served by the
-- backend.
alter table public.scrape_runs enable row level security;
alter table public.curriculum_references enable row level security;
revoke all on public.scrape_runs, public.curriculum_references from anon, authenticated;
grant select, insert, update, delete on public.scrape_runs, public.curriculum_references to authenticated;
grant all on public.scrape_runs, public.curriculum_references to service_role;

create policy "Admins manage scrape runs" on public.scrape_runs for all to authenticated
  using ((select private.is_admin())) with check ((select private.is_admin()));
create policy "Admins manage references" on public.curriculum_references for all to authenticated
  using ((select private.is_admin())) with check ((select private.is_admin()));

-- why: near-duplicate lookup without scanning every fingerprint. Two 64-bit fingerprints within Hamming
-- distance 3 differ in at most 3 of their four 16-bit blocks, so they share at least one block exactly
-- (pigeonhole); each block is indexed, and only the rows sharing a block are compared bit by bit.
-- Nearest first, then the earliest discovered; canonical_of is the reference a duplicate must point at.
-- The pigeonhole argument holds for distances up to 3 (four blocks); larger distances are refused.
create function public.find_near_duplicates(p_fingerprint bigint, p_max_distance integer default 3)
returns table (id uuid, distance integer, canonical_of uuid, discovered_at timestamptz)
language sql stable set search_path = '' as $$
  select r.id, bit_count((r.content_fingerprint # p_fingerprint)::bit(64))::integer as distance,
         coalesce(r.canonical_id, r.id) as canonical_of, r.discovered_at
    from public.curriculum_references r
   where (r.fp_block0 = (p_fingerprint & 65535)::integer
       or r.fp_block1 = ((p_fingerprint >> 16) & 65535)::integer
       or r.fp_block2 = ((p_fingerprint >> 32) & 65535)::integer
       or r.fp_block3 = ((p_fingerprint >> 48) & 65535)::integer)
     and bit_count((r.content_fingerprint # p_fingerprint)::bit(64)) <= least(p_max_distance, 3)
   order by 2, r.discovered_at, r.id
$$;

-- ---------------------------------------------------------------------------------------------------
-- A scrape run's lifecycle: one running run per source, heartbeats only while running, a final status
-- at the end.

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

-- why: a run whose sync died stays running; after p_stale_seconds without progress it fails with a clear
-- error (as reclaim_stale_jobs closes a job whose worker died), when runs are listed or a sync starts.
-- The time is the service's (p_now), on which its syncs write their heartbeats.
create function public.close_abandoned_scrape_runs(p_stale_seconds integer, p_now timestamptz default now()) returns integer
language plpgsql security definer set search_path = '' as $$
declare
  n integer;
begin
  update public.scrape_runs
     set status = 'failed', finished_at = p_now, error_count = error_count + 1,
         error_message = format('abandoned: no progress for more than %s s (its process stopped before the run ended)', p_stale_seconds)
   where status = 'running'
     and heartbeat_at < p_now - make_interval(secs => p_stale_seconds);
  get diagnostics n = row_count;
  return n;
end;
$$;

-- why: a run left running by a process that stopped, where no other process can be syncing (the embedded
-- database, which one process holds): closed as interrupted when that process starts again, its counts
-- kept, instead of waiting out the heartbeat's staleness.
create function public.close_scrape_runs_left_running(p_now timestamptz default now()) returns integer
language plpgsql security definer set search_path = '' as $$
declare
  n integer;
begin
  update public.scrape_runs
     set status = 'interrupted', finished_at = p_now,
         error_message = concat_ws('; ', error_message, 'interrupted: the process that ran it stopped before the run ended')
   where status = 'running';
  get diagnostics n = row_count;
  return n;
end;
$$;

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
