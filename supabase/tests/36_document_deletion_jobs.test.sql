-- A deleted document cancels its ingestion in flight; a requeue of a job whose document is gone starts it
-- on a new document.
begin;
create extension if not exists pgtap with schema extensions;
set local search_path = public, extensions;
select plan(10);

insert into curriculum_references (id, source, pdf_source, source_url, title, grade, subject, language, status) values
  ('c3600000-0000-4000-8000-00000000000a', 'test', 'http://p.test/del.pdf', 'http://p.test/del.pdf', 'Maths 4AS', '4AS', 'mathematiques', 'fr', 'discovered');
create temp table job on commit drop as select * from request_ingestion('c3600000-0000-4000-8000-00000000000a');

select is((select (status, chunks_removed)::text from delete_document((select file_id from job))), '(deleted,0)', 'the document of a queued job is deleted');
select is((select (status, error_message)::text from ingestion_jobs where id = (select id from job)), '(failed,"cancelled: its document was deleted")',
  'and its job is cancelled, saying why');
select is((select details->>'trigger' from ingestion_audit where job_id = (select id from job) order by id desc limit 1), 'document deleted', 'in the audit too');
select is((select status from curriculum_references where id = 'c3600000-0000-4000-8000-00000000000a'), 'discovered', 'the reference is discovered again');

select throws_ok(format('select requeue_job(%L)', gen_random_uuid()), 'PT404', null, 'an unknown job cannot be requeued');
select is((select (status, retry_count, file_id is null)::text from requeue_job((select id from job))), '(queued,1,t)',
  'a requeue puts the job back without the deleted document');
select throws_ok(format('select requeue_job(%L)', (select id from job)), 'PT409', null, 'a job that is not failed cannot be requeued');
create temp table claimed on commit drop as select * from claim_next_job();
select isnt((select file_id from begin_ingestion((select id from claimed), (select attempt from claimed))), null, 'when it starts it gets a new document');
select is((select count(*)::int from documents where reference_id = 'c3600000-0000-4000-8000-00000000000a'), 1, 'one');

select ok(not has_function_privilege('authenticated', 'public.requeue_job(uuid)', 'execute'), 'requeue_job is the service role''s only');

select * from finish();
rollback;
