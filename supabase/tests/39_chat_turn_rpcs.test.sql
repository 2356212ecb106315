-- The rules of a chat turn's RPCs: an Idempotency-Key binds a turn per user for 24 hours, is taken over
-- when its request died before its turn began, is freed by a refused turn, and a user's expired keys are
-- forgotten; a cancel is asked only of one's own streaming turn; a turn ends once.
begin;
create extension if not exists pgtap with schema extensions;
set local search_path = public, extensions;
select plan(13);

insert into auth.users (id, aud, role, email, raw_app_meta_data, raw_user_meta_data, created_at, updated_at) values
  ('00000000-0000-4000-8000-0000000000d1', 'authenticated', 'authenticated', 'fatimetou@example.mr', '{}', '{}', now(), now()),
  ('00000000-0000-4000-8000-0000000000d2', 'authenticated', 'authenticated', 'sidi@example.mr', '{}', '{}', now(), now());

select is((select row(turn_id, fresh)::text from public.claim_chat_idempotency('00000000-0000-4000-8000-0000000000d1', 'k1', 'h1', '00000000-0000-4000-8000-00000000b001')),
  row('00000000-0000-4000-8000-00000000b001'::uuid, true)::text, 'a new key is bound to its turn');
select is((select row(turn_id, request_hash, fresh)::text from public.claim_chat_idempotency('00000000-0000-4000-8000-0000000000d1', 'k1', 'h2', '00000000-0000-4000-8000-00000000b002')),
  row('00000000-0000-4000-8000-00000000b001'::uuid, 'h1', false)::text, 'the same key again gives the first turn and its hash');
select is((select fresh from public.claim_chat_idempotency('00000000-0000-4000-8000-0000000000d2', 'k1', 'h1', '00000000-0000-4000-8000-00000000b003')),
  true, 'keys are per user');

-- a request that died before its turn began: taken over after p_takeover_seconds, not before
update public.chat_idempotency_keys set created_at = now() - interval '60 seconds' where user_id = '00000000-0000-4000-8000-0000000000d1';
select is((select fresh from public.claim_chat_idempotency('00000000-0000-4000-8000-0000000000d1', 'k1', 'h1', '00000000-0000-4000-8000-00000000b004')),
  false, 'a key whose turn has not begun is waited for');
update public.chat_idempotency_keys set created_at = now() - interval '3 minutes' where user_id = '00000000-0000-4000-8000-0000000000d1';
select is((select row(turn_id, fresh)::text from public.claim_chat_idempotency('00000000-0000-4000-8000-0000000000d1', 'k1', 'h9', '00000000-0000-4000-8000-00000000b005')),
  row('00000000-0000-4000-8000-00000000b005'::uuid, true)::text, 'and taken over when its request died before it began');

-- a key whose turn began is kept for 24 hours, then is new
select public.get_or_create_wallet('00000000-0000-4000-8000-0000000000d1', 50);
select public.begin_conversation_turn('00000000-0000-4000-8000-00000000b005', '00000000-0000-4000-8000-0000000000d1', null,
  (select r.id from public.reserve_tokens('00000000-0000-4000-8000-0000000000d1', 15, 'req-b5', 120, 50) r), 'req-b5', 'Une question ?', 'Une question ?', '{}', 30);
update public.chat_idempotency_keys set created_at = now() - interval '3 minutes' where user_id = '00000000-0000-4000-8000-0000000000d1';
select is((select fresh from public.claim_chat_idempotency('00000000-0000-4000-8000-0000000000d1', 'k1', 'h9', '00000000-0000-4000-8000-00000000b006')),
  false, 'a key whose turn began is kept');
update public.chat_idempotency_keys set created_at = now() - interval '25 hours' where user_id = '00000000-0000-4000-8000-0000000000d1';
select is((select fresh from public.claim_chat_idempotency('00000000-0000-4000-8000-0000000000d1', 'k1', 'h9', '00000000-0000-4000-8000-00000000b006')),
  true, 'for 24 hours');
update public.chat_idempotency_keys set created_at = now() - interval '25 hours' where user_id = '00000000-0000-4000-8000-0000000000d1';
select public.claim_chat_idempotency('00000000-0000-4000-8000-0000000000d1', 'k2', 'h1', '00000000-0000-4000-8000-00000000b007');
select is((select array_agg(key order by key) from public.chat_idempotency_keys where user_id = '00000000-0000-4000-8000-0000000000d1'),
  array['k2'], 'a user''s keys past their day are forgotten as a new one is claimed');
select public.release_chat_idempotency('00000000-0000-4000-8000-0000000000d1', '00000000-0000-4000-8000-00000000b007');
select is((select count(*)::integer from public.chat_idempotency_keys where user_id = '00000000-0000-4000-8000-0000000000d1'), 0, 'a refused turn frees its key');

-- cancels and ends
select is(public.request_turn_cancel('00000000-0000-4000-8000-00000000b005', '00000000-0000-4000-8000-0000000000d2'), null, 'nobody cancels another''s turn');
select is(public.request_turn_cancel('00000000-0000-4000-8000-00000000b005', '00000000-0000-4000-8000-0000000000d1'), 'streaming', 'its owner asks a streaming turn to stop');
select ok(public.append_turn_text('00000000-0000-4000-8000-00000000b005', 'Une ', null, 30), 'and the generating process reads it at its next write');
select public.end_conversation_turn('00000000-0000-4000-8000-00000000b005', 'cancelled', 'réponse', null, '{"event": "done", "data": {}}', null);
select public.end_conversation_turn('00000000-0000-4000-8000-00000000b005', 'answered', ' de plus', null, '{"event": "done", "data": {}}', null);
select is((select status || ':' || content from public.chat_messages where turn_id = '00000000-0000-4000-8000-00000000b005' and role = 'teacher'),
  'cancelled:Une réponse', 'a turn ends once: a second end changes nothing');

select * from finish();
rollback;
