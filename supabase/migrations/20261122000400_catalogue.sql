-- The curriculum catalogue's discovery side: scrape runs and the references they find, with the SimHash
-- fingerprint that decides near-duplicates.

-- why: one row per sync of a source, with what it found.
create table public.scrape_runs (
  id uuid primary key default gen_random_uuid(),
  source text not null,
  status text not null default 'running' check (status in ('running', 'completed', 'failed')),
  found_count integer not null default 0,
  new_count integer not null default 0,
  duplicate_count integer not null default 0,
  quality_failed_count integer not null default 0,
  error_count integer not null default 0,
  error_message text,
  started_at timestamptz not null default now(),
  finished_at timestamptz
);
create index scrape_runs_source_started_idx on public.scrape_runs (source, started_at desc);

-- why: a discovered curriculum PDF. `references` is an SQL keyword, hence the name.
-- content_fingerprint is the 64-bit SimHash of the canonical text (as a signed bigint); its four 16-bit
-- blocks are stored and indexed for the pigeonhole lookup below.
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
  check ((status = 'duplicate') = (canonical_id is not null))
);
create index curriculum_references_fingerprint_idx on public.curriculum_references (content_fingerprint);
create index curriculum_references_block0_idx on public.curriculum_references (fp_block0);
create index curriculum_references_block1_idx on public.curriculum_references (fp_block1);
create index curriculum_references_block2_idx on public.curriculum_references (fp_block2);
create index curriculum_references_block3_idx on public.curriculum_references (fp_block3);
create index curriculum_references_source_status_idx on public.curriculum_references (source, status, discovered_at desc);
create index curriculum_references_status_idx on public.curriculum_references (status, discovered_at desc);

-- RLS (spec §5.7): admins, by the app_metadata.role claim, read and write; the public listings are
-- served by the backend.
alter table public.scrape_runs enable row level security;
alter table public.curriculum_references enable row level security;
revoke all on public.scrape_runs, public.curriculum_references from anon, authenticated;
grant select, insert, update, delete on public.scrape_runs, public.curriculum_references to authenticated;
grant all on public.scrape_runs, public.curriculum_references to service_role;

create policy "Admins manage scrape runs" on public.scrape_runs for all to authenticated
  using (((select auth.jwt()) -> 'app_metadata' ->> 'role') = 'admin')
  with check (((select auth.jwt()) -> 'app_metadata' ->> 'role') = 'admin');
create policy "Admins manage references" on public.curriculum_references for all to authenticated
  using (((select auth.jwt()) -> 'app_metadata' ->> 'role') = 'admin')
  with check (((select auth.jwt()) -> 'app_metadata' ->> 'role') = 'admin');

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
revoke execute on function public.find_near_duplicates(bigint, integer) from public, anon, authenticated;
grant execute on function public.find_near_duplicates(bigint, integer) to service_role;
