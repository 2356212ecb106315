-- A source has at most one running scrape run: a second is refused while one runs.
begin;
create extension if not exists pgtap with schema extensions;
set local search_path = public, extensions;
select plan(4);

insert into scrape_runs (id, source) values ('e2800000-0000-4000-8000-000000000001', 'portal');
select throws_ok($$insert into scrape_runs (source) values ('portal')$$, '23505', null, 'a second running run of the same source is refused');
select lives_ok($$insert into scrape_runs (source) values ('other-portal')$$, 'a running run of another source is not');
update scrape_runs set status = 'completed', finished_at = now() where id = 'e2800000-0000-4000-8000-000000000001';
select lives_ok($$insert into scrape_runs (source) values ('portal')$$, 'once the run has ended, the source runs again');
select lives_ok($$insert into scrape_runs (source, status) values ('portal', 'failed'), ('portal', 'completed')$$, 'runs that ended are not limited');

select * from finish();
rollback;
