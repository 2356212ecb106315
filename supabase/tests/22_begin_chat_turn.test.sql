-- The gate of a chat turn: the day's turns (settled, and in flight) against the tier's daily limit, then
-- the hold; a refusal reserves nothing.
begin;
create extension if not exists pgtap with schema extensions;
set local search_path = public, extensions;
select plan(10);

insert into auth.users (id, email, raw_app_meta_data, created_at, updated_at) values
  ('c3000000-0000-4000-8000-000000000003', 'mariem@example.mr', '{}', now(), now());

-- free tier: estimate 15, daily limit 2 (standard and premium unlimited here)
create temp table t1 on commit drop as
  select * from begin_chat_turn('c3000000-0000-4000-8000-000000000003', 'turn-1', array[15, 20, 30], array[2, 0, 0], 300, 50);
select is((select (tier, turns, estimated, refused, token_balance)::text from t1), '(free,0,15,,35)',
  'the first turn creates the wallet with its bonus and holds the free estimate');
select isnt((select reservation_id from t1), null, 'and returns the reservation');
select is((select count(*)::integer from reservations where user_id = 'c3000000-0000-4000-8000-000000000003' and status = 'reserved'), 1, 'one hold is in flight');

-- the first turn is still running: it counts toward the day
create temp table t2 on commit drop as
  select * from begin_chat_turn('c3000000-0000-4000-8000-000000000003', 'turn-2', array[15, 20, 30], array[2, 0, 0], 300, 50);
select is((select (turns, refused)::text from t2), '(1,)', 'a turn in flight counts toward the daily limit');

create temp table t3 on commit drop as
  select * from begin_chat_turn('c3000000-0000-4000-8000-000000000003', 'turn-3', array[15, 20, 30], array[2, 0, 0], 300, 50);
select is((select (turns, refused, reservation_id is null)::text from t3), '(2,daily_limit,t)', 'two in flight reach the limit of 2: refused, nothing held');
select is((select count(*)::integer from reservations where user_id = 'c3000000-0000-4000-8000-000000000003'), 2, 'the refusal reserved nothing');

-- a hold that expired no longer counts
update reservations set expires_at = now() - interval '1 second' where request_id = 'turn-2';
create temp table t4 on commit drop as
  select * from begin_chat_turn('c3000000-0000-4000-8000-000000000003', 'turn-4', array[15, 20, 30], array[2, 0, 0], 300, 50);
select is((select (turns, refused)::text from t4), '(1,)', 'an expired hold does not count');

-- the first turn is settled: it still counts, once, as a turn of today
select * from finalize_chat_turn((select reservation_id from t1), 7, 'turn-1', 'chat', 2, 140, 'offline-extractive', '{}');
create temp table t5 on commit drop as
  select * from begin_chat_turn('c3000000-0000-4000-8000-000000000003', 'turn-5', array[15, 20, 30], array[5, 0, 0], 300, 50);
select is((select (turns, refused)::text from t5), '(2,)', 'settled turns of today and turns in flight add up, each once (limit 5: not refused)');

-- the balance short of the estimate: refused, nothing held
update wallets set token_balance = 3 where user_id = 'c3000000-0000-4000-8000-000000000003';
create temp table t6 on commit drop as
  select * from begin_chat_turn('c3000000-0000-4000-8000-000000000003', 'turn-6', array[15, 20, 30], array[0, 0, 0], 300, 50);
select is((select (refused, token_balance, reservation_id is null)::text from t6), '(insufficient_balance,3,t)', 'a balance short of the estimate is refused with the balance');

select ok(not has_function_privilege('authenticated', 'public.begin_chat_turn(uuid, text, integer[], integer[], integer, integer, text, integer)', 'execute'),
  'only the service calls it');

select * from finish();
rollback;
