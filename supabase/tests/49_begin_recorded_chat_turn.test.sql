-- public.begin_recorded_chat_turn (migration 20261128083127_chat_turn_begins_recorded.sql): the turn's
-- reservation and its record in one statement. Held: the conversation's turn is written with the meta of
-- what was held; refused: nothing is recorded; a conversation that is not the student's refuses the whole
-- statement and nothing stays held.
begin;
create extension if not exists pgtap with schema extensions;
set local search_path = public, extensions;
select plan(5);

insert into auth.users (id, email, raw_app_meta_data, created_at, updated_at) values
  ('c4900000-0000-4000-8000-000000000049', 'mariem@example.mr', '{}', now(), now()),
  ('c4900000-0000-4000-8000-000000000050', 'aicha@example.mr', '{}', now(), now());
insert into conversations (id, user_id, title) values
  ('d4900000-0000-4000-8000-000000000050', 'c4900000-0000-4000-8000-000000000050', 'not hers');

create temp table held on commit drop as
  select * from begin_recorded_chat_turn('c4900000-0000-4000-8000-000000000049', 'turn-1', array[15, 20, 30], array[0, 0, 0], 300, 50,
                                         null, 0, 'e4900000-0000-4000-8000-000000000001', null, 'Qu''est-ce qu''une équation ?',
                                         'Équation', '{"path": "answer"}', 60, '4AS', 'mathematiques');
select ok((select conversation_id is not null and refused is null from held), 'held: a conversation is made for the turn');
select is((select t.meta - 'conversation_id' from chat_turns t where t.id = 'e4900000-0000-4000-8000-000000000001'),
          (select jsonb_build_object('path', 'answer', 'tier', h.tier, 'hint_level', h.hint_level,
                                     'reservation', jsonb_build_object('id', h.reservation_id, 'estimated', h.estimated,
                                                                       'expires_at', to_char(h.expires_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')))
             from held h),
          'the turn''s meta: the service''s, with what was held');

select throws_ok($$select * from begin_recorded_chat_turn('c4900000-0000-4000-8000-000000000049', 'turn-2', array[15, 20, 30], array[0, 0, 0],
                                                         300, 50, null, 0, 'e4900000-0000-4000-8000-000000000002',
                                                         'd4900000-0000-4000-8000-000000000050', 'et ensuite ?', 'x', '{}', 60, null, null)$$,
                 'PT404', null, 'another student''s conversation: refused');
select is((select count(*)::integer from reservations where user_id = 'c4900000-0000-4000-8000-000000000049'), 1,
          'and nothing stays held for it');

update wallets set token_balance = 0 where user_id = 'c4900000-0000-4000-8000-000000000049';
create temp table refused on commit drop as
  select * from begin_recorded_chat_turn('c4900000-0000-4000-8000-000000000049', 'turn-3', array[15, 20, 30], array[0, 0, 0], 300, 50,
                                         null, 0, 'e4900000-0000-4000-8000-000000000003', null, 'encore ?', 'x', '{}', 60, null, null);
select is((select (refused, conversation_id is null, (select count(*) from chat_turns where id = 'e4900000-0000-4000-8000-000000000003'))::text
             from refused), '(insufficient_balance,t,0)', 'refused: nothing recorded');

select * from finish();
rollback;
