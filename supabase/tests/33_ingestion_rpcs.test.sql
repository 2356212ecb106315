-- The two ends of an ingestion: begin_ingestion gives a job the scraper queued its document (once,
-- fenced by the attempt), and complete_ingestion writes the detected language where the reference had
-- none, and only there.
begin;
create extension if not exists pgtap with schema extensions;
set local search_path = public, extensions;
select plan(14);

create temp table r1 on commit drop as
  select * from register_reference('test', 'http://p.test/z.pdf', 'http://p.test/z.pdf', 'الزكاة', null, 2, 'cours', '5AS', 'education-islamique',
                                    null, null, null, 3, true);
create temp table r2 on commit drop as
  select * from register_reference('test', 'http://p.test/y.pdf', 'http://p.test/y.pdf', 'Pourcentages', null, 0, null, '5AS', 'mathematiques',
                                    'fr', null, null, 3, true);
select is((select file_id from ingestion_jobs where id = (select job_id from r1)), null, 'a job the scraper queued has no document yet');

create temp table c1 on commit drop as select * from claim_next_job();
select is((select id from c1), (select job_id from r1), 'the job is claimed');
select throws_ok(format('select * from begin_ingestion(%L, %s)', (select id from c1), (select attempt from c1) + 1), 'PT409', null,
  'another attempt cannot begin it');
select is((select count(*)::int from documents where reference_id = (select reference_id from r1)), 0, 'and created nothing');

create temp table b1 on commit drop as select * from begin_ingestion((select id from c1), (select attempt from c1));
select isnt((select file_id from b1), null, 'begin_ingestion gives the job a document');
select results_eq(format('select title, weight, category, grade, subject, language, status, origin, reference_id from documents where id = %L', (select file_id from b1)),
  format($$ values ('الزكاة'::text, 2, 'cours'::text, '5AS'::text, 'education-islamique'::text, null::text, 'processing'::text, 'reference'::text, %L::uuid) $$, (select reference_id from r1)),
  'filled from its reference, processing');
select is((select file_id from begin_ingestion((select id from c1), (select attempt from c1))), (select file_id from b1), 'beginning again keeps that document');
select is((select count(*)::int from documents where reference_id = (select reference_id from r1)), 1, 'one document only');

select transition_job((select id from c1), 'tokenizing', (select attempt from c1));
select transition_job((select id from c1), 'embedding_request_sent', (select attempt from c1));
insert into ingestion_staging (job_id, id, file_id, page_number, chunk_index, content, embedding)
  select (select id from c1), 'z-1', (select file_id from b1), 1, 0, 'الزكاة ركن', array_fill(0.5::real, array[1536])::extensions.vector;
select complete_ingestion((select id from c1), (select attempt from c1), 'curriculum-1536', 'grade-5as-education-islamique', 1, '{}'::jsonb, 'ar');
select is((select status from ingestion_jobs where id = (select id from c1)), 'ready', 'the job is ready');
select is((select language from curriculum_references where id = (select reference_id from r1)), 'ar', 'a reference without a language takes the detected one');
select is((select language from documents where id = (select file_id from b1)), 'ar', 'and so does its document');

-- a reference that has a language keeps it, whatever the pages look like
create temp table c2 on commit drop as select * from claim_next_job();
create temp table b2 on commit drop as select * from begin_ingestion((select id from c2), (select attempt from c2));
select transition_job((select id from c2), 'tokenizing', (select attempt from c2));
select transition_job((select id from c2), 'embedding_request_sent', (select attempt from c2));
select complete_ingestion((select id from c2), (select attempt from c2), 'curriculum-1536', 'grade-5as-mathematiques', 1, '{}'::jsonb, 'ar');
select is((select language from curriculum_references where id = (select reference_id from r2)), 'fr', 'a reference with a language keeps it');
select is((select language from documents where id = (select file_id from b2)), 'fr', 'and its document has it');

select throws_ok(format('select * from begin_ingestion(%L, %s)', (select id from c2), (select attempt from c2)), 'PT409', null,
  'a job that is ready cannot begin again');

select * from finish();
rollback;
