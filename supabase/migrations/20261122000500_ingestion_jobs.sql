-- The ingestion job queue, as far as discovery needs it: a non-duplicate reference gets a queued job, and
-- every job transition and every rejected document is written to the ingestion audit. The ingestion
-- pipeline extends these tables.

-- why: one ingestion of one reference into the vector index.
create table public.ingestion_jobs (
  id uuid primary key default gen_random_uuid(),
  reference_id uuid not null references public.curriculum_references (id) on delete cascade,
  file_id uuid,
  status text not null default 'queued'
    check (status in ('queued', 'parsing', 'tokenizing', 'embedding_request_sent', 'embedding_upserted', 'ready', 'failed')),
  chunks_created integer not null default 0,
  vectors_upserted integer not null default 0,
  retry_count integer not null default 0,
  error_message text,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
create index ingestion_jobs_status_created_idx on public.ingestion_jobs (status, created_at);
create index ingestion_jobs_reference_idx on public.ingestion_jobs (reference_id);

-- why: the trail of every job transition, and of documents the quality gate rejected (no job then).
create table public.ingestion_audit (
  id bigint generated always as identity primary key,
  job_id uuid references public.ingestion_jobs (id) on delete cascade,
  reference_id uuid references public.curriculum_references (id) on delete set null,
  source_url text,
  from_status text,
  to_status text not null,
  error_message text,
  details jsonb not null default '{}'::jsonb,
  created_at timestamptz not null default now()
);
create index ingestion_audit_job_idx on public.ingestion_audit (job_id, id);
create index ingestion_audit_created_idx on public.ingestion_audit (created_at desc);

-- Service role only (spec §5.7): no policy for anyone else.
alter table public.ingestion_jobs enable row level security;
alter table public.ingestion_audit enable row level security;
revoke all on public.ingestion_jobs, public.ingestion_audit from anon, authenticated;
grant all on public.ingestion_jobs, public.ingestion_audit to service_role;
