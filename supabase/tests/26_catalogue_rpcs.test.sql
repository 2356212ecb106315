-- A reference's registration (its duplicate decision, job and audit) and a document's deletion, each one
-- call and one transaction.
begin;
create extension if not exists pgtap with schema extensions;
set local search_path = public, extensions;
select plan(16);

insert into scrape_runs (id, source) values ('e5000000-0000-4000-8000-000000000001', 'portal');

-- registration
create temp table first_ref on commit drop as
  select * from register_reference('portal', 'http://p.test/a.pdf', 'http://p.test/a.pdf', 'A', null, 0, null, '4AS', 'physique', 'fr',
                                   1234567890123, 'e5000000-0000-4000-8000-000000000001', 3, true, false, '{"trigger": "test"}');
select is((select outcome from first_ref), 'new', 'a new file is registered');
select is((select (status, scrape_run_id, canonical_id)::text from curriculum_references where id = (select reference_id from first_ref)),
  '(discovered,e5000000-0000-4000-8000-000000000001,)', 'discovered, in its run, canonical');
select is((select status from ingestion_jobs where id = (select job_id from first_ref)), 'queued', 'with a queued job');
select is((select (from_status, to_status, details->>'trigger')::text from ingestion_audit where job_id = (select job_id from first_ref)),
  '(,queued,test)', 'and the job''s first audit row with the caller''s details');

select is((select outcome from register_reference('portal', 'http://p.test/a.pdf', 'http://p.test/other.pdf', 'A', null, 0, null, '4AS', 'physique', 'fr',
                                                    1, null, 3, true)), 'known', 'a PDF URL already registered is known');
select is((select outcome from register_reference('portal', 'http://p.test/a2.pdf', 'http://p.test/a.pdf', 'A', null, 0, null, '4AS', 'physique', 'fr',
                                                    1, null, 3, true)), 'known', 'so is a final URL already registered');

-- three bits away: a duplicate of the first, no job
create temp table dup on commit drop as
  select * from register_reference('portal', 'http://p.test/copy.pdf', 'http://p.test/copy.pdf', 'Copy', null, 0, null, '4AS', 'physique', 'fr',
                                   1234567890123 # 7, null, 3, true);
select is((select (outcome, canonical_id = (select reference_id from first_ref), job_id is null)::text from dup), '(duplicate,t,t)',
  'a fingerprint within the threshold is a duplicate of the canonical reference, without a job');
select is((select status from curriculum_references where id = (select reference_id from dup)), 'duplicate', 'stored as duplicate');
select is((select outcome from register_reference('portal', 'http://p.test/far.pdf', 'http://p.test/far.pdf', 'Far', null, 0, null, '4AS', 'physique', 'fr',
                                                    1234567890123 # (15::bigint << 20), null, 3, true)), 'new', 'four bits away (from both) is another document');

create temp table bare on commit drop as
  select * from register_reference('portal', 'http://p.test/bare.pdf', 'http://p.test/bare.pdf', 'Bare', null, 0, null, null, null, 'fr', 99, null, 3, false);
select is((select (outcome, job_id is null)::text from bare), '(needs_metadata,t)', 'without a namespace: registered, not queued');
select is((select status from curriculum_references where id = (select reference_id from bare)), 'discovered', 'it waits, discovered');

-- deletion
insert into documents (id, reference_id, title, grade, subject, language, status, vectordb_index, vectordb_namespace)
  values ('e5000000-0000-4000-8000-0000000000d1', (select reference_id from first_ref), 'A', '4AS', 'physique', 'fr', 'ready', 'curriculum-1536', 'grade-4as-physique');
update curriculum_references set status = 'ready', vectordb_index = 'curriculum-1536', vectordb_namespace = 'grade-4as-physique', vectordb_vector_count = 2
 where id = (select reference_id from first_ref);
insert into document_chunks (id, file_id, page_number, chunk_index, content) values
  ('c1', 'e5000000-0000-4000-8000-0000000000d1', 1, 0, 'un'), ('c2', 'e5000000-0000-4000-8000-0000000000d1', 1, 1, 'deux');
insert into vectors (index_name, namespace, id, file_id, embedding, metadata)
  select 'curriculum-1536', 'grade-4as-physique', c.id, c.file_id, array_fill(0.1, array[1536])::vector, '{}'::jsonb from document_chunks c
   where c.file_id = 'e5000000-0000-4000-8000-0000000000d1';

select is((select (status, chunks_removed, vectors_removed)::text from delete_document('e5000000-0000-4000-8000-0000000000d1')), '(deleted,2,2)',
  'a deletion removes the vectors and the chunks, and says how many');
select is((select count(*)::integer from documents where id = 'e5000000-0000-4000-8000-0000000000d1'), 0, 'and the row');
select is((select (status, vectordb_namespace, vectordb_vector_count)::text from curriculum_references where id = (select reference_id from first_ref)),
  '(discovered,,)', 'its reference is discovered again, without vector metadata');
select is((select count(*)::integer from delete_document('e5000000-0000-4000-8000-0000000000d1')), 0, 'an unknown document gives no row');

select ok(not has_function_privilege('authenticated', 'public.delete_document(uuid)', 'execute')
          and not has_function_privilege('anon', 'public.register_reference(text, text, text, text, text, integer, text, text, text, text, bigint, uuid, integer, boolean, boolean, jsonb)', 'execute'),
  'only the service calls them');

select * from finish();
rollback;
