-- Conversations and their messages: a student reads and deletes their own, nobody else's; nobody but the
-- chat function's RPCs writes them; deleting a conversation takes its messages and leaves the money
-- records; a turn whose process died is interrupted, its text kept and its hold released.
begin;
create extension if not exists pgtap with schema extensions;
set local search_path = public, extensions;
select plan(22);

insert into auth.users (id, aud, role, email, raw_app_meta_data, raw_user_meta_data, created_at, updated_at) values
  ('00000000-0000-4000-8000-0000000000c1', 'authenticated', 'authenticated', 'aicha@example.mr', '{}', '{}', now(), now()),
  ('00000000-0000-4000-8000-0000000000c2', 'authenticated', 'authenticated', 'brahim@example.mr', '{}', '{}', now(), now());
select public.get_or_create_wallet('00000000-0000-4000-8000-0000000000c1', 50);
create temp table t_ids (reservation uuid, conversation uuid);
grant select on t_ids to authenticated;
insert into t_ids (reservation) select r.id from public.reserve_tokens('00000000-0000-4000-8000-0000000000c1', 15, 'req-1', 120, 50) r;
update t_ids set conversation = public.begin_conversation_turn('00000000-0000-4000-8000-00000000a001', '00000000-0000-4000-8000-0000000000c1', null,
  (select reservation from t_ids), 'req-1', 'Qu''est-ce qu''une suite géométrique ?', 'Qu''est-ce qu''une suite géométrique ?',
  '{"request_id": "req-1"}', 30);

select is((select title from public.conversations where id = (select conversation from t_ids)), 'Qu''est-ce qu''une suite géométrique ?', 'a turn without a conversation makes one, titled by its question');
select is((select array_agg(role || ':' || status order by created_at) from public.chat_messages where conversation_id = (select conversation from t_ids)),
  array['student:sent', 'teacher:streaming'], 'the question and the answer to come, in order');
select ok(public.append_turn_text('00000000-0000-4000-8000-00000000a001', 'Une suite ', '{"sources": [{"n": 1}]}', 30) = false, 'an append says no cancel was asked');
select ok(public.append_turn_text('00000000-0000-4000-8000-00000000a001', 'géométrique…', null, 30) = false, 'and appends again');
select is((select content from public.chat_messages where turn_id = '00000000-0000-4000-8000-00000000a001' and role = 'teacher'), 'Une suite géométrique…', 'the answer is the text appended, as written');
select is((select sources from public.chat_messages where turn_id = '00000000-0000-4000-8000-00000000a001' and role = 'teacher'), '[{"n": 1}]'::jsonb, 'with its sources');
select throws_ok($$select public.begin_conversation_turn('00000000-0000-4000-8000-00000000a002', '00000000-0000-4000-8000-0000000000c2',
  (select conversation from t_ids), null, 'req-2', 'et ensuite ?', 'et ensuite ?', '{}', 30)$$, 'PT404', null, 'nobody adds a turn to another student''s conversation');

-- the owner, signed in
set local role authenticated;
select set_config('request.jwt.claims', '{"sub": "00000000-0000-4000-8000-0000000000c1", "role": "authenticated"}', true);
select is((select count(*)::integer from public.conversations), 1, 'a student reads their conversation');
select is((select count(*)::integer from public.chat_messages), 2, 'and its messages');
select throws_ok($$insert into public.conversations (user_id, title) values ('00000000-0000-4000-8000-0000000000c1', 'x')$$, '42501', null, 'but writes no conversation');
select throws_ok($$update public.chat_messages set content = 'free answer'$$, '42501', null, 'and no message');
select throws_ok($$insert into public.chat_messages (conversation_id, turn_id, role, status) values ((select conversation from t_ids), gen_random_uuid(), 'teacher', 'answered')$$, '42501', null, 'nor adds one');
select throws_ok($$select public.append_turn_text('00000000-0000-4000-8000-00000000a001', 'x', null, 30)$$, '42501', null, 'nor calls the chat function''s RPCs');
select is((select array_agg(p.proname::text order by p.proname) from pg_proc p join pg_namespace n on n.oid = p.pronamespace
            where n.nspname = 'public' and p.proname in ('begin_conversation_turn', 'append_turn_text', 'end_conversation_turn', 'request_turn_cancel',
                                                         'interrupt_stale_turns', 'claim_chat_idempotency', 'release_chat_idempotency')
              and (has_function_privilege('authenticated', p.oid, 'execute') or has_function_privilege('anon', p.oid, 'execute'))),
  null, 'none of them: the API roles execute no RPC of the conversations');
select throws_ok($$select count(*) from public.chat_turns$$, '42501', null, 'and the turns'' state is the chat function''s alone');

-- another student
select set_config('request.jwt.claims', '{"sub": "00000000-0000-4000-8000-0000000000c2", "role": "authenticated"}', true);
select is((select count(*)::integer from public.conversations) + (select count(*)::integer from public.chat_messages), 0, 'another student reads none of it');
delete from public.conversations;
reset role;
select is((select count(*)::integer from public.conversations), 1, 'nor deletes it');

-- a lease that nobody renews: the process died
select is(public.interrupt_stale_turns(null, now() + interval '31 seconds'), 1, 'a turn past its lease is interrupted');
select is((select status || ':' || content from public.chat_messages where turn_id = '00000000-0000-4000-8000-00000000a001' and role = 'teacher'),
  'interrupted:Une suite géométrique…', 'its text kept readable');
select is((select w.token_balance from public.wallets w where w.user_id = '00000000-0000-4000-8000-0000000000c1'), 50::bigint, 'and its hold released: nothing charged');

-- the owner deletes it
set local role authenticated;
select set_config('request.jwt.claims', '{"sub": "00000000-0000-4000-8000-0000000000c1", "role": "authenticated"}', true);
delete from public.conversations;
reset role;
select is((select count(*)::integer from public.chat_messages where turn_id = '00000000-0000-4000-8000-00000000a001'), 0, 'the owner deletes it, its messages with it');
select is((select count(*)::integer from public.token_ledger where user_id = '00000000-0000-4000-8000-0000000000c1')
        + (select count(*)::integer from public.usage_log where user_id = '00000000-0000-4000-8000-0000000000c1'), 4, 'and the ledger and usage rows stay');

select * from finish();
rollback;
