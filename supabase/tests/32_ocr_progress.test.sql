-- Progress of a running attempt, and jobs that wait for a claimer that can recognize scanned pages.
begin;
create extension if not exists pgtap with schema extensions;
set local search_path = public, extensions;
select plan(19);

insert into curriculum_references (id, source, pdf_source, source_url, title, grade, subject, language, status) values
  ('c2000000-0000-4000-8000-00000000000a', 'test', 'http://p.test/scan.pdf', 'http://p.test/scan.pdf', 'Scan 3AS', '3AS', 'svt', 'fr', 'discovered'),
  ('c2000000-0000-4000-8000-00000000000b', 'test', 'http://p.test/text.pdf', 'http://p.test/text.pdf', 'Text 3AS', '3AS', 'svt', 'fr', 'discovered');

create temp table scan on commit drop as select * from request_ingestion('c2000000-0000-4000-8000-00000000000a');
create temp table text_job on commit drop as select * from request_ingestion('c2000000-0000-4000-8000-00000000000b');
select is((select id from claim_next_job()), (select id from scan), 'the oldest job is claimed');
select is((select (pages_done, pages_total, pages_ocr)::text from ingestion_jobs where id = (select id from scan)), '(0,,0)', 'a claim starts with no pages counted');

-- progress
update ingestion_jobs set locked_at = now() - interval '1 hour' where id = (select id from scan);
select lives_ok(format('select report_job_progress(%L, 1, 3, 10, 2)', (select id from scan)), 'the attempt reports its progress');
select is((select (pages_done, pages_total, pages_ocr)::text from ingestion_jobs where id = (select id from scan)), '(3,10,2)', 'pages done, total and recognized are stored');
select ok((select locked_at > now() - interval '1 minute' from ingestion_jobs where id = (select id from scan)), 'and the job''s lock is refreshed: it is not stale');
select lives_ok(format('select report_job_progress(%L, 1, 4, 10)', (select id from scan)), 'the count of recognized pages may be left out');
select is((select pages_ocr from ingestion_jobs where id = (select id from scan)), 2, 'and is then kept');
select throws_ok(format('select report_job_progress(%L, 7, 5, 10)', (select id from scan)), 'PT409', null, 'another attempt cannot report');

-- deferral for OCR
select is((select status from defer_job_for_ocr((select id from scan), 1, 10)), 'queued', 'a job without a recognizer goes back to the queue');
select is((select (needs_ocr, retry_count, pages_total is null, locked_at is null)::text from ingestion_jobs where id = (select id from scan)),
  '(t,0,t,t)', 'marked needs_ocr, not counted as a retry, its progress and lock cleared');
select is((select details->>'needs_ocr' from ingestion_audit where job_id = (select id from scan) order by id desc limit 1), 'true', 'the audit says why');
select throws_ok(format('select defer_job_for_ocr(%L, 1, 10)', (select id from scan)), 'PT409', null, 'a job that is not running cannot be deferred');

-- claims
select is((select id from claim_next_job(true, true)), (select id from scan), 'a claimer of deferred jobs only takes it');
update ingestion_jobs set status = 'queued', locked_at = null, needs_ocr = false where id = (select id from scan);
select is((select id from claim_next_job(true, true)), null, 'and leaves a job that was never deferred to the dispatch');
update ingestion_jobs set needs_ocr = true where id = (select id from scan);
select is((select id from claim_next_job(false)), (select id from text_job), 'a claimer that cannot recognize skips it and takes the next job');
select is((select id from claim_next_job(false)), null, 'and then finds nothing');
select is((select id from claim_next_job(true)), (select id from scan), 'a claimer that can recognize takes it');
select is((select attempt from ingestion_jobs where id = (select id from scan)), 3, 'as a new attempt');

select is(
  (select array_agg(p.proname::text order by p.proname) from pg_proc p join pg_namespace n on n.oid = p.pronamespace
    where n.nspname = 'public' and p.proname in ('report_job_progress', 'defer_job_for_ocr', 'claim_next_job')
      and (has_function_privilege('anon', p.oid, 'execute') or has_function_privilege('authenticated', p.oid, 'execute'))),
  null, 'none of them is executable by anon or authenticated');

select * from finish();
rollback;
