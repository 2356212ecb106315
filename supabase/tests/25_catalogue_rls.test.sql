-- The catalogue's rows: admins manage scrape runs and references through the API roles; students and
-- anonymous callers read none of them, and nobody but the service reads documents, chunks, vectors or jobs.
begin;
create extension if not exists pgtap with schema extensions;
set local search_path = public, extensions;
select plan(12);

insert into scrape_runs (id, source, status) values ('d4000000-0000-4000-8000-000000000001', 'portal', 'completed');
insert into curriculum_references (id, source, pdf_source, source_url, title, grade, subject, language, status) values
  ('d4000000-0000-4000-8000-0000000000a1', 'portal', 'http://p.test/a.pdf', 'http://p.test/a.pdf', 'A', '4AS', 'physique', 'fr', 'discovered');
-- the admin of the claims below, as an account (its profile holds the role the policies check)
insert into auth.users (id, aud, role, email, raw_app_meta_data, raw_user_meta_data, created_at, updated_at)
values ('d4000000-0000-4000-8000-0000000000c2', 'authenticated', 'authenticated', 'chef@example.mr', '{"role": "admin"}', '{}', now(), now());

-- a student
set local role authenticated;
select set_config('request.jwt.claims', '{"sub": "d4000000-0000-4000-8000-0000000000c1", "role": "authenticated", "app_metadata": {"role": "student"}, "user_metadata": {"role": "admin"}}', true);
select is((select count(*)::integer from scrape_runs), 0, 'a student reads no scrape run');
select is((select count(*)::integer from curriculum_references), 0, 'nor any reference (user_metadata makes no admin)');
select throws_ok($$ insert into curriculum_references (source, pdf_source, source_url) values ('x', 'http://x.test/1.pdf', 'http://x.test/1.pdf') $$,
  '42501', null, 'nor registers one');
update curriculum_references set title = 'changed';
select throws_ok($$ select * from documents $$, '42501', null, 'documents are the service''s');
select throws_ok($$ select * from ingestion_jobs $$, '42501', null, 'and jobs too');

-- an admin
select set_config('request.jwt.claims', '{"sub": "d4000000-0000-4000-8000-0000000000c2", "role": "authenticated", "app_metadata": {"role": "admin"}}', true);
select is((select title from curriculum_references where id = 'd4000000-0000-4000-8000-0000000000a1'), 'A', 'an admin reads references, and the student''s update changed nothing');
select lives_ok($$ update curriculum_references set title = 'B' where id = 'd4000000-0000-4000-8000-0000000000a1' $$, 'an admin changes one');
select is((select count(*)::integer from scrape_runs), 1, 'and reads scrape runs');
select throws_ok($$ select * from document_chunks $$, '42501', null, 'but not chunks, which only the service reads');

-- anonymous
select set_config('request.jwt.claims', '{"role": "anon"}', true);
set local role anon;
select throws_ok($$ select * from curriculum_references $$, '42501', null, 'anonymous callers read no reference');
select throws_ok($$ select * from scrape_runs $$, '42501', null, 'nor scrape runs');
reset role;
select is((select title from curriculum_references where id = 'd4000000-0000-4000-8000-0000000000a1'), 'B', 'the admin''s change is there');

select * from finish();
rollback;
