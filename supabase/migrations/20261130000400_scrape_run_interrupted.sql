-- A sync that its process's shutdown stops closes its run as interrupted: it stops at the first link
-- after the shutdown begins, keeps the counts of what it did, and the next sync goes on. The run was left
-- running before, and its source answered 409 until the heartbeat's staleness closed it as failed.
alter table public.scrape_runs drop constraint scrape_runs_status_check;
alter table public.scrape_runs add constraint scrape_runs_status_check check (status in ('running', 'completed', 'failed', 'interrupted'));

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

revoke all on function public.close_scrape_runs_left_running(timestamptz) from public, anon, authenticated;
grant execute on function public.close_scrape_runs_left_running(timestamptz) to service_role;
