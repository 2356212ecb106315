-- check_wallet counts the day's turns only for a tier with a daily limit (migration
-- 20261128053442_chat_turn_daily_count.sql): a tier without one is never refused for its turns, and its
-- count, which grows with every turn of the day, is not made (turns is null).
begin;
create extension if not exists pgtap with schema extensions;
set local search_path = public, extensions;
select plan(4);

insert into auth.users (id, email, raw_app_meta_data, created_at, updated_at) values
  ('c4500000-0000-4000-8000-000000000045', 'vatma@example.mr', '{}', now(), now());
select get_or_create_wallet('c4500000-0000-4000-8000-000000000045', 500);
insert into usage_log (request_id, user_id, reservation_id, kind, estimated, actual, charged)
  select 'earlier-' || g, 'c4500000-0000-4000-8000-000000000045', gen_random_uuid(), 'chat', 1, 1, 0 from generate_series(1, 3) g;

create temp table unlimited on commit drop as
  select * from begin_chat_turn('c4500000-0000-4000-8000-000000000045', 'turn-1', array[15, 20, 30], array[0, 0, 0], 300, 50);
select is((select (turns is null, refused is null, reservation_id is not null)::text from unlimited), '(t,t,t)',
  'no daily limit: the turns are not counted, and the turn is held');

create temp table limited on commit drop as
  select * from begin_chat_turn('c4500000-0000-4000-8000-000000000045', 'turn-2', array[15, 20, 30], array[10, 0, 0], 300, 50);
select is((select (turns, refused)::text from limited), '(4,)', 'a daily limit: the three turns of today and the one in flight are counted');

create temp table reached on commit drop as
  select * from begin_chat_turn('c4500000-0000-4000-8000-000000000045', 'turn-3', array[15, 20, 30], array[5, 0, 0], 300, 50);
select is((select (turns, refused, reservation_id is null)::text from reached), '(5,daily_limit,t)', 'the limit reached: refused, nothing held');

update wallets set subscription_tier = 'premium' where user_id = 'c4500000-0000-4000-8000-000000000045';
create temp table premium on commit drop as
  select * from begin_chat_turn('c4500000-0000-4000-8000-000000000045', 'turn-4', array[15, 20, 30], array[5, 5, 0], 300, 50);
select is((select (tier, turns is null, refused is null)::text from premium), '(premium,t,t)', 'a tier whose limit is 0 is not counted, whatever the others allow');

select * from finish();
rollback;
