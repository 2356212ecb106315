-- The day's chat turns kept in a counter (migration 20261128082444_chat_day_counter.sql): every billed
-- turn's usage row (chat, clarify) counts once for its UTC day, other kinds do not, yesterday's do not
-- count today; turns_today and check_wallet read it, and the daily limit refuses at it.
begin;
create extension if not exists pgtap with schema extensions;
set local search_path = public, extensions;
select plan(6);

insert into auth.users (id, email, raw_app_meta_data, created_at, updated_at) values
  ('c4800000-0000-4000-8000-000000000048', 'khadijetou@example.mr', '{}', now(), now());
select get_or_create_wallet('c4800000-0000-4000-8000-000000000048', 500);

insert into usage_log (request_id, user_id, reservation_id, kind, estimated, actual, charged, created_at)
  select 'k-' || g, 'c4800000-0000-4000-8000-000000000048', gen_random_uuid(), k, 1, 1, 0, at
    from (values (1, 'chat', now()), (2, 'clarify', now()), (3, 'released', now()), (4, 'manual', now()),
                 (5, 'chat', now() - interval '1 day'), (6, 'chat', now() - interval '1 day')) v(g, k, at);

select is(turns_today('c4800000-0000-4000-8000-000000000048'), 2, 'today: the chat and the clarifying turn, not the released or manual rows');
select is((select turns from private.chat_days where user_id = 'c4800000-0000-4000-8000-000000000048'
             and day = ((now() - interval '1 day') at time zone 'utc')::date), 2, 'yesterday''s turns are yesterday''s');
select is((select count(*)::integer from private.chat_days where user_id = 'c4800000-0000-4000-8000-000000000048'), 2, 'one row per day of use');

create temp table held on commit drop as
  select * from begin_chat_turn('c4800000-0000-4000-8000-000000000048', 'turn-1', array[15, 20, 30], array[4, 0, 0], 300, 50);
select is((select (turns, refused)::text from held), '(2,)', 'check_wallet reads the counter');

insert into usage_log (request_id, user_id, reservation_id, kind, estimated, actual, charged)
  values ('k-7', 'c4800000-0000-4000-8000-000000000048', gen_random_uuid(), 'chat', 1, 1, 0);
create temp table refused on commit drop as
  select * from begin_chat_turn('c4800000-0000-4000-8000-000000000048', 'turn-2', array[15, 20, 30], array[4, 0, 0], 300, 50);
select is((select (turns, refused, reservation_id is null)::text from refused), '(4,daily_limit,t)', 'the counter and the turn in flight reach the limit: refused');
select is((select has_table_privilege('authenticated', 'private.chat_days', 'select')), false, 'students cannot read the counters');

select * from finish();
rollback;
