-- What a wallet cycle writes (migration 20261128060105_wallet_cycle_writes.sql): a chat turn's usage row
-- is written once, with its facts, by the settlement's insert; finalize_reservation's row as before (no
-- turn facts); the expiry finds the reservations in flight without reservations_due_idx.
begin;
create extension if not exists pgtap with schema extensions;
set local search_path = public, extensions;
select plan(7);

insert into auth.users (id, email, raw_app_meta_data, created_at, updated_at) values
  ('c4600000-0000-4000-8000-000000000046', 'khadijetou@example.mr', '{}', now(), now());
select get_or_create_wallet('c4600000-0000-4000-8000-000000000046', 500);

-- the counters of this transaction, read before and after (they also hold what earlier transactions of
-- the session wrote and the server has not gathered yet)
create temp table counters_before on commit drop as
  select n_tup_ins, n_tup_upd from pg_stat_xact_user_tables where schemaname = 'public' and relname = 'usage_log';
create temp table turn on commit drop as
  select * from begin_chat_turn('c4600000-0000-4000-8000-000000000046', 'turn-46', array[15, 20, 30], array[0, 0, 0], 300, 50);
select * from finalize_chat_turn((select reservation_id from turn), 9, 'turn-46', 'chat', 2, 180, 'offline-extractive', '{"path": "answer"}');
select is((select (s.n_tup_ins - coalesce(b.n_tup_ins, 0), s.n_tup_upd - coalesce(b.n_tup_upd, 0))::text
             from pg_stat_xact_user_tables s left join counters_before b on true
            where s.schemaname = 'public' and s.relname = 'usage_log'), '(1,0)',
  'a chat turn writes its usage row once: one insert, no update');
select is((select (kind, actual, charged, characters, model, details)::text from usage_log where request_id = 'turn-46'),
  '(chat,9,9,180,offline-extractive,"{""path"": ""answer""}")', 'with its characters, model and details');

create temp table manual on commit drop as
  select * from reserve_tokens('c4600000-0000-4000-8000-000000000046', 10, 'manual-46', 300, 50);
select * from finalize_reservation((select id from manual), 4, 'manual-46', 'manual', 2);
select is((select (kind, charged, characters, model, details)::text from usage_log where request_id = 'manual-46'),
  '(manual,4,,,{})', 'finalize_reservation writes its row as before: no turn facts, empty details');

select hasnt_index('public', 'reservations', 'reservations_due_idx', 'reservations_due_idx is gone');
select has_index('public', 'reservations', 'reservations_user_due_idx', 'the reservations in flight keep their index');

create temp table due on commit drop as
  select * from reserve_tokens('c4600000-0000-4000-8000-000000000046', 10, 'due-46', 300, 50);
update reservations set expires_at = now() - interval '1 second' where id = (select id from due);
select is((select (expired, tokens)::text from expire_reservations()), '(1,10)', 'the expiry still finds a reservation past its TTL');
select ok(not has_function_privilege('service_role', 'private.settle_reservation(uuid, integer, text, text, numeric, integer, text, jsonb)', 'execute'),
  'only the wallet RPCs settle');

select * from finish();
rollback;
