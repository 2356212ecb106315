-- A sync that its process's shutdown stops closes its run as interrupted: it stops at the first link
-- after the shutdown begins, keeps the counts of what it did, and the next sync goes on. The run was left
-- running before, and its source answered 409 until the heartbeat's staleness closed it as failed.
alter table public.scrape_runs drop constraint scrape_runs_status_check;
alter table public.scrape_runs add constraint scrape_runs_status_check check (status in ('running', 'completed', 'failed', 'interrupted'));
