-- A scrape run interrupted (20261101000400_catalogue.sql): the status, and the closing of the runs a stopped
-- process left running (called at start where one process holds the database).
begin;
create extension if not exists pgtap with schema extensions;
set local search_path = public, extensions;
select plan(6);

insert into scrape_runs (id, source, status, found_count, new_count, error_message) values
  ('e4100000-0000-4000-8000-000000000001', 'portal-a', 'running', 9, 4, null),
  ('e4100000-0000-4000-8000-000000000002', 'portal-b', 'completed', 3, 3, null);
select lives_ok($$insert into scrape_runs (source, status, finished_at) values ('portal-c', 'interrupted', now())$$, 'interrupted is a status a run may end in');
select throws_ok($$insert into scrape_runs (source, status) values ('portal-d', 'paused')$$, '23514', null, 'no status outside the list');

select is(close_scrape_runs_left_running(), 1, 'the running run is closed, the ended ones left');
select is((select (status, found_count, new_count, finished_at = now())::text from scrape_runs where id = 'e4100000-0000-4000-8000-000000000001'),
  '(interrupted,9,4,t)', 'interrupted, its counts kept, finished now');
select is((select error_message from scrape_runs where id = 'e4100000-0000-4000-8000-000000000001'),
  'interrupted: the process that ran it stopped before the run ended', 'saying why');
select ok(not has_function_privilege('authenticated', 'public.close_scrape_runs_left_running(timestamptz)', 'execute')
      and not has_function_privilege('anon', 'public.close_scrape_runs_left_running(timestamptz)', 'execute'),
  'close_scrape_runs_left_running is the service role''s only');

select * from finish();
rollback;
