-- A reference whose file changed at its address: what its downloads looked like is recorded, and
-- refresh_reference re-ingests it, or re-decides a duplicate, in one transaction.
begin;
create extension if not exists pgtap with schema extensions;
set local search_path = public, extensions;
select plan(13);

insert into public.curriculum_references (id, source, pdf_source, source_url, title, grade, subject, language, status, content_fingerprint, canonical_id) values
  ('e5000000-0000-4000-8000-000000000001', 'portail', 'https://p.mr/a.pdf', 'https://p.mr/a.pdf', 'A', '4AS', 'mathematiques', 'fr', 'ready', 1, null),
  ('e5000000-0000-4000-8000-000000000002', 'portail', 'https://p.mr/b.pdf', 'https://p.mr/b.pdf', 'B', '4AS', 'mathematiques', 'fr', 'duplicate', 1, 'e5000000-0000-4000-8000-000000000001'),
  ('e5000000-0000-4000-8000-000000000003', 'portail', 'https://p.mr/c.pdf', 'https://p.mr/c.pdf', 'C', null, null, 'fr', 'discovered', 4096, null),
  ('e5000000-0000-4000-8000-000000000004', 'portail', 'https://p.mr/d.pdf', 'https://p.mr/d.pdf', 'D', '4AS', 'mathematiques', 'fr', 'duplicate', 3, 'e5000000-0000-4000-8000-000000000001');

select public.record_reference_fetch('e5000000-0000-4000-8000-000000000001', repeat('a', 64), '"v1"', 'Tue, 01 Sep 2026 08:00:00 GMT');
select public.record_reference_fetch('e5000000-0000-4000-8000-000000000001', null, null, null);
select is((select row(content_sha256 = repeat('a', 64), etag, last_modified, fetched_at is not null)::text from public.curriculum_references where id = 'e5000000-0000-4000-8000-000000000001'),
  '(t,"""v1""","Tue, 01 Sep 2026 08:00:00 GMT",t)', 'a 304 (no new validators) keeps the ones recorded');
select throws_ok($$ select public.record_reference_fetch('e5000000-0000-4000-8000-000000000001', 'not a digest', null, null) $$, '23514', null,
  'a digest is 64 hex digits');

-- a ready reference whose text changed: a forced ingestion of the same reference
select is((select row(outcome, job_id is not null, canonical_id)::text from public.refresh_reference('e5000000-0000-4000-8000-000000000001', (1::bigint << 40) - 1, repeat('b', 64), '"v2"', null, 3, true, false, '{"sha256": "bbb"}')),
  '(changed,t,)', 'a changed file of a ready reference is queued again');
select is((select row(content_fingerprint, content_sha256 = repeat('b', 64), etag, last_modified)::text from public.curriculum_references where id = 'e5000000-0000-4000-8000-000000000001'),
  format('(%s,t,"""v2""",)', (1::bigint << 40) - 1), 'its fingerprint and validators are the new file''s');
select is((select status from public.curriculum_references where id = 'e5000000-0000-4000-8000-000000000001'), 'processing',
  'the reference is processing again');
select is((select count(*)::int from public.documents where reference_id = 'e5000000-0000-4000-8000-000000000001'), 1,
  'with one document, re-used');
select is((select details ->> 'trigger' from public.ingestion_audit a join public.ingestion_jobs j on j.id = a.job_id
            where j.reference_id = 'e5000000-0000-4000-8000-000000000001' and a.from_status is null),
  'file changed at its address', 'its job''s first audit row says why');

-- a duplicate whose new text is near no stored copy is a reference of its own again, with its job
select is((select row(outcome, job_id is not null)::text from public.refresh_reference('e5000000-0000-4000-8000-000000000002', -1, repeat('c', 64), null, null, 3, true)),
  '(changed,t)', 'a duplicate that changed into another lesson is queued');
select is((select row(status, canonical_id)::text from public.curriculum_references where id = 'e5000000-0000-4000-8000-000000000002'),
  '(processing,)', 'and is no one''s duplicate');

-- a duplicate whose new text is still near a stored copy (not itself) stays one
select is((select row(outcome, job_id, canonical_id)::text from public.refresh_reference('e5000000-0000-4000-8000-000000000004', -2, repeat('d', 64), null, null, 3, true)),
  '(duplicate,,e5000000-0000-4000-8000-000000000002)', 'a duplicate still near a stored copy stays a duplicate, of that copy');
select is((select count(*)::int from public.ingestion_jobs where reference_id = 'e5000000-0000-4000-8000-000000000004'), 0, 'with no job');

-- a reference without grade or subject: recorded, not queued
select is((select row(outcome, job_id)::text from public.refresh_reference('e5000000-0000-4000-8000-000000000003', 8192, repeat('e', 64), null, null, 3, false)),
  '(changed,)', 'a reference without a namespace is recorded and not queued');
select throws_ok($$ select * from public.refresh_reference('e5000000-0000-4000-8000-0000000000ff', 1, repeat('f', 64), null, null, 3, true) $$, 'PT404', null,
  'an unknown reference is 404');

select * from finish();
rollback;
