-- The state rules kept in RPCs: a scrape run's lifecycle, a reference's metadata frozen while it is
-- ingested, and a manual upload that no student sees before all its chunks and vectors are stored.
begin;
create extension if not exists pgtap with schema extensions;
set local search_path = public, extensions;
select plan(24);

-- a scrape run: one running per source, heartbeats only while it runs, a final status at the end
select ok((select run_id is not null and running_id is null from public.start_scrape_run('portail-a', now())), 'a first run of a source starts');
select is((select row(run_id is null, running_id = (select id from public.scrape_runs where source = 'portail-a'))::text
             from public.start_scrape_run('portail-a', now())),
  '(t,t)', 'a second one names the run already running and starts nothing');
select is((select count(*)::int from public.scrape_runs where source = 'portail-a'), 1, 'one run of the source exists');
select ok(public.heartbeat_scrape_run((select id from public.scrape_runs where source = 'portail-a'), now(), 7, 2, 1, 1, 0, 0), 'a running run takes a heartbeat');
select is((select row(found_count, new_count, duplicate_count)::text from public.scrape_runs where source = 'portail-a'), '(7,2,1)', 'with its counts');
select throws_ok($$ select public.finish_scrape_run((select id from public.scrape_runs where source = 'portail-a'), 'running', now(), 0, 0, 0, 0, 0, 0, null) $$,
  'PT400', null, 'a run does not end running');
select lives_ok($$ select public.finish_scrape_run((select id from public.scrape_runs where source = 'portail-a'), 'completed', now(), 8, 3, 1, 1, 0, 2, null) $$,
  'a run ends completed');
select is((select row(status, found_count, changed_count, finished_at is not null)::text from public.scrape_runs where source = 'portail-a'),
  '(completed,8,2,t)', 'with the outcome it reached');
select ok(not public.heartbeat_scrape_run((select id from public.scrape_runs where source = 'portail-a'), now(), 99, 0, 0, 0, 0, 0),
  'a late heartbeat does not reopen an ended run');
select is((select found_count from public.scrape_runs where source = 'portail-a'), 8, 'nor change its counts');
select throws_ok($$ select public.finish_scrape_run('00000000-0000-4000-8000-00000000dead', 'failed', now(), 0, 0, 0, 0, 0, 0, 'x') $$,
  'PT404', null, 'an unknown run cannot be finished');
select ok((select run_id is not null from public.start_scrape_run('portail-a', now())), 'once the run ended, the source can start another');

-- a reference's metadata
insert into public.curriculum_references (id, source, pdf_source, source_url, title, grade, subject, language, status) values
  ('e6000000-0000-4000-8000-000000000001', 'portail', 'https://p.mr/a.pdf', 'https://p.mr/a.pdf', 'A', '4AS', 'mathematiques', 'fr', 'discovered');
select is(public.update_reference_metadata('e6000000-0000-4000-8000-000000000001', '{"title": "A", "weight": 0}', 'admin:test', 'req-0'), '{}'::jsonb,
  'values equal to the stored ones change nothing');
select is(public.update_reference_metadata('e6000000-0000-4000-8000-000000000001', '{"grade": "7C", "title": "Suites"}', 'admin:test', 'req-1'),
  '{"grade": {"from": "4AS", "to": "7C"}, "title": {"from": "A", "to": "Suites"}}'::jsonb, 'the fields that differ change, each with its before and after');
select is((select details ->> 'request_id' from public.ingestion_audit where reference_id = 'e6000000-0000-4000-8000-000000000001' and details ->> 'trigger' = 'reference update'),
  'req-1', 'the change is in the ingestion audit');
insert into public.documents (id, reference_id, grade, subject, language, status, title) values
  ('e6000000-0000-4000-8000-0000000000e1', 'e6000000-0000-4000-8000-000000000001', '7C', 'mathematiques', 'fr', 'ready', 'Suites');
select throws_ok($$ select public.update_reference_metadata('e6000000-0000-4000-8000-000000000001', '{"subject": "physique"}', 'admin:test', 'req-2') $$,
  'PT409', null, 'a subject is frozen while a document of the reference is ready');
select is(public.update_reference_metadata('e6000000-0000-4000-8000-000000000001', '{"title": "Suites numériques"}', 'admin:test', 'req-3') -> 'title' ->> 'to',
  'Suites numériques', 'its title is not');
select is((select title from public.documents where id = 'e6000000-0000-4000-8000-0000000000e1'), 'Suites numériques', 'and the document mirrors it');
select throws_ok($$ select public.update_reference_metadata('00000000-0000-4000-8000-00000000dead', '{"title": "x"}', 'admin:test', 'req-4') $$,
  'PT404', null, 'an unknown reference');

-- a manual upload
select public.begin_upload('e6000000-0000-4000-8000-0000000000f1', '7C', 'mathematiques', 'fr', 'curriculum', '7c_math', 2);
select is((select status from public.documents where id = 'e6000000-0000-4000-8000-0000000000f1'), 'processing', 'an upload starts processing');
select throws_ok($$ select public.publish_upload('e6000000-0000-4000-8000-0000000000f1') $$, 'PT409', null, 'an upload without chunks is not published');
select is(public.stage_upload_chunks('e6000000-0000-4000-8000-0000000000f1', jsonb_build_array(
    jsonb_build_object('id', 'u1-1-0', 'page_number', 1, 'chunk_index', 0, 'content', 'Une suite', 'embedding', (select array_fill(0.1, array[1536])::extensions.vector::text), 'metadata', '{"text": "Une suite"}'::jsonb),
    jsonb_build_object('id', 'u1-2-0', 'page_number', 2, 'chunk_index', 0, 'content', 'La raison', 'embedding', (select array_fill(0.2, array[1536])::extensions.vector::text), 'metadata', '{"text": "La raison"}'::jsonb))),
  2, 'its chunks are staged with their vectors');
select is((select row(status, chunk_count, vectordb_vector_count, ingestion_ts is not null)::text from public.publish_upload('e6000000-0000-4000-8000-0000000000f1')),
  '(ready,2,2,t)', 'and it is published ready with its counts');
select throws_ok($$ select public.stage_upload_chunks('e6000000-0000-4000-8000-0000000000f1', '[]'::jsonb) $$, 'PT409', null,
  'a published upload takes no more chunks');

select * from finish();
rollback;
