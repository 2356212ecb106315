-- Ingestion attempts are fenced: only a reference's newest job changes its document and reference; a
-- forced re-ingestion cancels the job in flight; a new version is staged and published in one step, and a
-- failed or crashed attempt leaves the served version as it was.
begin;
create extension if not exists pgtap with schema extensions;
set local search_path = public, extensions;
select plan(31);

insert into curriculum_references (id, source, pdf_source, source_url, title, grade, subject, language, status) values
  ('c1000000-0000-4000-8000-00000000000a', 'test', 'http://p.test/a.pdf', 'http://p.test/a.pdf', 'Maths 4AS', '4AS', 'mathematiques', 'fr', 'discovered');

-- a helper: stage one chunk of a job as the pipeline does (after check_job_attempt)
create function pg_temp.stage(p_job uuid, p_attempt integer, p_page integer, p_text text) returns void language sql as $$
  select public.check_job_attempt(p_job, p_attempt);
  insert into public.ingestion_staging (job_id, id, file_id, page_number, chunk_index, content, embedding, metadata)
  select p_job, 'chunk-' || p_page, j.file_id, p_page, 0, p_text, array_fill(0.5::real, array[1536])::extensions.vector, '{}'::jsonb
    from public.ingestion_jobs j where j.id = p_job;
$$;
create function pg_temp.run_to_ready(p_job uuid, p_texts text[]) returns void language plpgsql as $$
declare
  a integer;
begin
  select attempt into a from public.ingestion_jobs where id = p_job;
  perform public.transition_job(p_job, 'tokenizing', a);
  perform public.transition_job(p_job, 'embedding_request_sent', a);
  for i in 1 .. array_length(p_texts, 1) loop
    perform pg_temp.stage(p_job, a, i, p_texts[i]);
  end loop;
  perform public.complete_ingestion(p_job, a, 'curriculum-1536', 'grade-4as-mathematiques', 3);
end;
$$;

-- version 1
create temp table j1 on commit drop as select * from request_ingestion('c1000000-0000-4000-8000-00000000000a');
select is((select id from claim_next_job()), (select id from j1), 'the first job is claimed');
select pg_temp.run_to_ready((select id from j1), array['v1 page 1', 'v1 page 2', 'v1 page 3']);
select is((select status from documents where id = (select file_id from j1)), 'ready', 'version 1 is published');
select results_eq(format('select content from document_chunks where file_id = %L order by page_number', (select file_id from j1)),
  $$ values ('v1 page 1'), ('v1 page 2'), ('v1 page 3') $$, 'with its chunks');
select is((select count(*)::int from vectors where file_id = (select file_id from j1)), 3, 'and its vectors');
select is((select count(*)::int from ingestion_staging), 0, 'the staging is emptied on publication');
select is((select chunk_count from documents where id = (select file_id from j1)), 3, 'the document counts its chunks');

-- a forced re-ingestion while version 1 is served: the document keeps serving it
create temp table j2 on commit drop as select * from request_ingestion('c1000000-0000-4000-8000-00000000000a', true);
select is((select status from documents where id = (select file_id from j2)), 'ready', 'a re-ingestion leaves the served document ready');
select is((select status from curriculum_references where id = 'c1000000-0000-4000-8000-00000000000a'), 'processing', 'the reference is processing');
select is((select id from claim_next_job()), (select id from j2), 'the re-ingestion is claimed');
select pg_temp.stage((select id from j2), 1, 1, 'v2 page 1');

-- a second forced request cancels the job in flight and fences it
create temp table j3 on commit drop as select * from request_ingestion('c1000000-0000-4000-8000-00000000000a', true);
select is((select status from ingestion_jobs where id = (select id from j2)), 'failed', 'force cancels the job in flight');
select matches((select error_message from ingestion_jobs where id = (select id from j2)), '^cancelled: superseded by job ', 'saying by which job');
select is((select count(*)::int from ingestion_staging where job_id = (select id from j2)), 0, 'and drops what it staged');
select throws_ok(format('select pg_temp.stage(%L, 1, 2, %L)', (select id from j2), 'late'), 'PT409', null, 'its worker''s next write is refused');
select throws_ok(format('select * from transition_job(%L, %L)', (select id from j2), 'queued'), 'PT409', null, 'a superseded job cannot be requeued');
select is((select status from documents where id = (select file_id from j2)), 'ready', 'the document still serves version 1');
select is((select count(*)::int from ingestion_jobs where reference_id = 'c1000000-0000-4000-8000-00000000000a' and status not in ('ready', 'failed')), 1,
  'one job at most is active for a reference');

-- the new job crashes (reclaimed): version 1 stays, and so does the reference's readiness
select is((select id from claim_next_job()), (select id from j3), 'the newest job is claimed');
select pg_temp.stage((select id from j3), 1, 1, 'v3 page 1');
update ingestion_jobs set locked_at = now() - interval '2 hours' where id = (select id from j3);
select is(reclaim_stale_jobs(3600), 1, 'the crashed job is reclaimed');
select is((select status from documents where id = (select file_id from j3)), 'ready', 'a failed re-ingestion leaves the document serving version 1');
select is((select status from curriculum_references where id = 'c1000000-0000-4000-8000-00000000000a'), 'ready', 'and its reference ready');
select results_eq(format('select content from document_chunks where file_id = %L order by page_number', (select file_id from j3)),
  $$ values ('v1 page 1'), ('v1 page 2'), ('v1 page 3') $$, 'with version 1''s chunks, untouched');
select is((select count(*)::int from ingestion_staging), 0, 'nothing staged is left behind');

-- requeued, it completes: version 2 replaces version 1 in one step, what it no longer has removed
select lives_ok(format('select * from transition_job(%L, %L)', (select id from j3), 'queued'), 'the current job can be requeued');
select is((select status from documents where id = (select file_id from j3)), 'ready', 'a requeue leaves the served document ready');
select is((select id from claim_next_job()), (select id from j3), 'and is claimed again');
select pg_temp.run_to_ready((select id from j3), array['v3 page 1', 'v3 page 2']);
select results_eq(format('select content from document_chunks where file_id = %L order by page_number', (select file_id from j3)),
  $$ values ('v3 page 1'), ('v3 page 2') $$, 'the new version is served, the third page it no longer has is gone');
select is((select count(*)::int from vectors where file_id = (select file_id from j3)), 2, 'its vectors too');
select is((select chunk_count from documents where id = (select file_id from j3)), 2, 'the document counts the new version');

-- a job claimed again cannot write with its old attempt
create temp table j4 on commit drop as select * from request_ingestion('c1000000-0000-4000-8000-00000000000a', true);
select is((select attempt from claim_next_job()), 1, 'a fourth job runs');
select throws_ok(format('select public.check_job_attempt(%L, 0)', (select id from j4)), 'PT409', null, 'an older attempt is refused');

-- a superseded job left queued (from before the fence) is never claimed
insert into ingestion_jobs (reference_id, file_id, status, seq) overriding system value
values ('c1000000-0000-4000-8000-00000000000a', (select file_id from j4), 'queued', 0);
select is((select id from claim_next_job()), null, 'a queued job that is not its reference''s newest is skipped');

select * from finish();
rollback;
