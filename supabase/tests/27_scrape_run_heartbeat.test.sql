-- A scrape run's heartbeat, and the closing of runs whose sync died (no progress for p_stale_seconds).
begin;
create extension if not exists pgtap with schema extensions;
set local search_path = public, extensions;
select plan(10);

select col_not_null('public', 'scrape_runs', 'heartbeat_at', 'every run has a heartbeat');
insert into scrape_runs (id, source) values ('e2700000-0000-4000-8000-000000000001', 'portal-a');
select ok((select heartbeat_at = now() from scrape_runs where id = 'e2700000-0000-4000-8000-000000000001'), 'a new run''s heartbeat is its start');

insert into scrape_runs (id, source, status, found_count, new_count, error_count, heartbeat_at) values
  ('e2700000-0000-4000-8000-000000000002', 'portal-b', 'running', 9, 4, 0, now() - interval '61 seconds'),
  ('e2700000-0000-4000-8000-000000000003', 'portal-c', 'running', 2, 0, 0, now() - interval '59 seconds'),
  ('e2700000-0000-4000-8000-000000000004', 'portal', 'completed', 9, 9, 0, now() - interval '1 day');

select is(close_abandoned_scrape_runs(60), 1, 'one run is closed: the running one without progress for more than 60 s');
select is((select (status, error_count, found_count, new_count, finished_at = now())::text from scrape_runs where id = 'e2700000-0000-4000-8000-000000000002'),
  '(failed,1,9,4,t)', 'failed, one error more, its counts kept, finished now');
select is((select error_message from scrape_runs where id = 'e2700000-0000-4000-8000-000000000002'),
  'abandoned: no progress for more than 60 s (its process stopped before the run ended)', 'saying why');
select is((select status from scrape_runs where id = 'e2700000-0000-4000-8000-000000000003'), 'running', 'a run with recent progress is left running');
select is((select status from scrape_runs where id = 'e2700000-0000-4000-8000-000000000004'), 'completed', 'a run that ended is left as it ended');
select is(close_abandoned_scrape_runs(60), 0, 'closing again closes nothing');
select is(close_abandoned_scrape_runs(60, now() + interval '2 seconds'), 1, 'on the service''s time, given, the other one is closed once it is past');

select ok(not has_function_privilege('authenticated', 'public.close_abandoned_scrape_runs(integer, timestamptz)', 'execute')
      and not has_function_privilege('anon', 'public.close_abandoned_scrape_runs(integer, timestamptz)', 'execute'),
  'close_abandoned_scrape_runs is the service role''s only');

select * from finish();
rollback;
