-- The ingestion job state machine: only the spec's transitions, an audit row for each, documents and
-- references in step, claims in order and fenced, stale runs reclaimed.
begin;
create extension if not exists pgtap with schema extensions;
set local search_path = public, extensions;
select plan(24);

insert into curriculum_references (id, source, pdf_source, source_url, title, grade, subject, language, status) values
  ('c0000000-0000-4000-8000-00000000000a', 'test', 'http://p.test/a.pdf', 'http://p.test/a.pdf', 'Maths 4AS', '4AS', 'mathematiques', 'fr', 'discovered'),
  ('c0000000-0000-4000-8000-00000000000b', 'test', 'http://p.test/b.pdf', 'http://p.test/b.pdf', 'Physique', '5AS', 'physique', 'fr', 'discovered');
insert into curriculum_references (id, source, pdf_source, source_url, status, canonical_id) values
  ('c0000000-0000-4000-8000-00000000000d', 'test', 'http://p.test/d.pdf', 'http://p.test/d.pdf', 'duplicate', 'c0000000-0000-4000-8000-00000000000a');

create temp table j1 on commit drop as select * from request_ingestion('c0000000-0000-4000-8000-00000000000a');
select is((select status from j1), 'queued', 'an ingest request makes a queued job');
select is((select status from documents where id = (select file_id from j1)), 'processing', 'and a document in processing');
select is((select title from documents where id = (select file_id from j1)), 'Maths 4AS', 'with the reference''s metadata');
select is((select status from curriculum_references where id = 'c0000000-0000-4000-8000-00000000000a'), 'processing', 'the reference is processing');
select throws_ok($$ select * from request_ingestion('c0000000-0000-4000-8000-00000000000a') $$, 'PT409', null, 'a second request while a job is active is a conflict');
select throws_ok($$ select * from request_ingestion('c0000000-0000-4000-8000-00000000000d') $$, 'PT409', null, 'a duplicate reference is refused');
select throws_ok($$ select * from request_ingestion('c0000000-0000-4000-8000-0000000000ff') $$, 'PT404', null, 'an unknown reference is 404');

select * from request_ingestion('c0000000-0000-4000-8000-00000000000b');
create temp table claimed on commit drop as select * from claim_next_job();
select is((select id from claimed), (select id from j1), 'the oldest queued job is claimed first');
select is((select status from claimed), 'parsing', 'a claimed job is parsing');
select is((select attempt from claimed), 1, 'a claim counts an attempt');

select throws_ok(format('select * from transition_job(%L, %L)', (select id from j1), 'ready'), 'PT409', null, 'parsing cannot jump to ready');
select lives_ok(format('select * from transition_job(%L, %L, 1)', (select id from j1), 'tokenizing'), 'parsing → tokenizing');
select throws_ok(format('select * from transition_job(%L, %L, 0)', (select id from j1), 'embedding_request_sent'), 'PT409', null,
  'a stale worker (an older attempt) cannot move the job');
select lives_ok(format('select * from transition_job(%L, %L, 1)', (select id from j1), 'embedding_request_sent'), 'tokenizing → embedding_request_sent');
select lives_ok(format('select * from transition_job(%L, %L, 1)', (select id from j1), 'embedding_upserted'), 'embedding_request_sent → embedding_upserted');
select throws_ok(format('select * from transition_job(%L, %L, 1, %L)', (select id from j1), 'failed', 'late'), 'PT409', null,
  'embedding_upserted cannot fail (spec §3.1)');
select lives_ok(format('select * from transition_job(%L, %L, 1)', (select id from j1), 'ready'), 'embedding_upserted → ready');
select is((select status from documents where id = (select file_id from j1)), 'ready', 'the document becomes ready');
select isnt((select ingestion_ts from documents where id = (select file_id from j1)), null, 'with its ingestion timestamp');
select results_eq(format('select from_status, to_status from ingestion_audit where job_id = %L order by id', (select id from j1)),
  $$ values (null::text, 'queued'), ('queued', 'parsing'), ('parsing', 'tokenizing'), ('tokenizing', 'embedding_request_sent'),
            ('embedding_request_sent', 'embedding_upserted'), ('embedding_upserted', 'ready') $$,
  'every transition is in the audit, in order');

-- failure, reclaim and requeue
create temp table j2 on commit drop as select * from claim_next_job();
update ingestion_jobs set locked_at = now() - interval '2 hours' where id = (select id from j2);
select is(reclaim_stale_jobs(3600), 1, 'a job stuck past the limit is reclaimed');
select is((select status || ': ' || error_message from ingestion_jobs where id = (select id from j2)),
  'failed: worker stopped responding (no progress for more than 3600 s)', 'as failed, with a clear error');
select lives_ok(format('select * from transition_job(%L, %L)', (select id from j2), 'queued'), 'failed → queued (requeue)');
select is((select retry_count from ingestion_jobs where id = (select id from j2)), 1, 'a requeue counts a retry');

select * from finish();
rollback;
