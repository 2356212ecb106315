-- public.finalize_recorded_chat_turn (migration 20261128083714_chat_turn_ends_settled.sql): a turn
-- settled and ended in one statement. The end's terminal and usage carry the settlement's figures, the
-- last text is appended, the conversation follows the cited document only when the turn is charged; a
-- settlement refused (the reservation no longer held) writes no end.
begin;
create extension if not exists pgtap with schema extensions;
set local search_path = public, extensions;
select plan(6);

insert into auth.users (id, email, raw_app_meta_data, created_at, updated_at) values
  ('c5600000-0000-4000-8000-000000000056', 'salka@example.mr', '{}', now(), now());
insert into documents (id, title, grade, subject, language, status) values
  ('a5600000-0000-4000-8000-000000000001', 'Physique 7C', '7C', 'physique', 'fr', 'ready');
create temp table held on commit drop as
  select * from begin_recorded_chat_turn('c5600000-0000-4000-8000-000000000056', 'turn-1', array[15, 20, 30], array[0, 0, 0], 300, 50,
                                         null, 0, 'e5600000-0000-4000-8000-000000000001', null, 'La loi d''Ohm ?', 'Ohm',
                                         '{"path": "answer"}', 60, '4AS', 'mathematiques');
select append_turn_text('e5600000-0000-4000-8000-000000000001', 'U = R', null, 60);

create temp table settled on commit drop as
  select * from finalize_recorded_chat_turn((select reservation_id from held), 12, 'turn-1', 'chat', 1.5, 40, 'offline',
                                            '{"outcome": "answered"}', 'e5600000-0000-4000-8000-000000000001', 'answered', ' I.',
                                            null, '{"event": "done", "data": {"outcome": "answered", "usage": null, "timings": {"search": 1.5}}}',
                                            'a5600000-0000-4000-8000-000000000001');
select is((select (s.charged, s.status, u.charged, u.characters)::text from settled s join usage_log u on u.reservation_id = s.reservation_id),
          '(12,finalized,12,40)', 'settled: charged once, its usage row written');
select is((select t.terminal -> 'data' -> 'usage' from chat_turns t where t.id = 'e5600000-0000-4000-8000-000000000001'),
          (select jsonb_build_object('estimated', s.estimated, 'actual', s.actual, 'charged', s.charged, 'refunded', s.refunded,
                                     'uncovered', s.uncovered, 'characters', 40, 'token_balance', s.token_balance) from settled s),
          'the terminal carries the settlement''s usage');
select ok((select (t.terminal -> 'data' -> 'timings' ? 'finalize') and (t.terminal -> 'data' -> 'timings' ->> 'search') = '1.5'
             and t.terminal = s.terminal from chat_turns t, settled s where t.id = 'e5600000-0000-4000-8000-000000000001'),
          'its timings gain the settlement''s, and the terminal returned is the one stored');
select is((select (t.status, m.content, m.status, c.subject)::text from chat_turns t
             join chat_messages m on m.turn_id = t.id and m.role = 'teacher' join conversations c on c.id = t.conversation_id
            where t.id = 'e5600000-0000-4000-8000-000000000001'),
          '(answered,"U = R I.",answered,physique)', 'ended: the last text appended, the lesson of the charged answer''s source');

create temp table again on commit drop as
  select * from begin_recorded_chat_turn('c5600000-0000-4000-8000-000000000056', 'turn-2', array[15, 20, 30], array[0, 0, 0], 300, 50,
                                         null, 0, 'e5600000-0000-4000-8000-000000000002', null, 'Et la puissance ?', 'P',
                                         '{}', 60, null, null);
select finalize_reservation((select reservation_id from again), 0, 'turn-2', 'released', 1.5);
select throws_ok($$select * from finalize_recorded_chat_turn((select reservation_id from again), 12, 'turn-2', 'chat', 1.5, 40, null, '{}',
                                                            'e5600000-0000-4000-8000-000000000002', 'answered', 'P = U I', null,
                                                            '{"event": "done", "data": {}}', null)$$,
                 'PT409', null, 'a reservation settled already: refused');
select is((select (t.status, t.terminal is null)::text from chat_turns t where t.id = 'e5600000-0000-4000-8000-000000000002'),
          '(streaming,t)', 'and the turn is not ended by it');

select * from finish();
rollback;
