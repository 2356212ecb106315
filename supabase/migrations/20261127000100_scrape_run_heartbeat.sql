-- A scrape run whose process dies mid-sync (an Edge Function stopped at its wall clock, a server
-- killed) never writes its end, and stayed `running` for ever: a dead run could not be told from a long
-- one. A sync now refreshes its run's heartbeat_at, with its counts so far, at each listing page and each
-- link it is done with; a run still `running` whose heartbeat is older than the service's
-- SCRAPE_RUN_STALE_SECONDS is closed as failed, saying so, when runs are listed or a sync starts (as
-- reclaim_stale_jobs closes a job whose worker died).

alter table public.scrape_runs add column heartbeat_at timestamptz;
-- a run of before this migration was last heard of when it ended, or else when it started
update public.scrape_runs set heartbeat_at = coalesce(finished_at, started_at);
alter table public.scrape_runs alter column heartbeat_at set default now(), alter column heartbeat_at set not null;
comment on column public.scrape_runs.heartbeat_at is 'the last progress of the run (a listing page or a link done), written by its sync with its counts so far';
create index scrape_runs_running_heartbeat_idx on public.scrape_runs (heartbeat_at) where status = 'running';

-- why: a run whose sync died stays running; after p_stale_seconds without progress it fails with a clear
-- error. The time is the service's (p_now), on which its syncs write their heartbeats.
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

revoke all on function public.close_abandoned_scrape_runs(integer, timestamptz) from public, anon, authenticated;
grant execute on function public.close_abandoned_scrape_runs(integer, timestamptz) to service_role;
