-- Two syncs of one source could run at once (two admins, or an admin and a schedule): each downloaded,
-- read and registered the same links, and their counts split between two runs. A source now has at most
-- one running run: the unique index below refuses a second, and the service answers 409 naming the run
-- that is running. A run whose sync died is closed by close_abandoned_scrape_runs before a sync starts,
-- so a dead run does not hold its source for longer than SCRAPE_RUN_STALE_SECONDS.

-- runs left running side by side before this migration: the newest stays running, the others are closed
update public.scrape_runs r
   set status = 'failed', finished_at = coalesce(r.finished_at, now()), error_count = r.error_count + 1,
       error_message = 'closed: another run of the same source was running at the same time'
 where r.status = 'running'
   and exists (select 1 from public.scrape_runs n
                where n.source = r.source and n.status = 'running'
                  and (n.started_at, n.id) > (r.started_at, r.id));

create unique index scrape_runs_one_running_idx on public.scrape_runs (source) where status = 'running';
comment on index public.scrape_runs_one_running_idx is 'at most one running run per source: a second sync of a source is refused while one runs';
