-- The wallet cycle in fewer statements (migration 20261128114900_wallet_cycle_statements.sql): the same
-- rows and ledger record as before; finalize in PL/pgSQL; check_wallet refuses a short balance without a
-- subtransaction (so the refund of a due hold stays); the checks that restated their writer are gone,
-- and what they said still holds; usage_log's key is its reservation.
begin;
create extension if not exists pgtap with schema extensions;
set local search_path = public, extensions;
select plan(16);

insert into auth.users (id, email, raw_app_meta_data, created_at, updated_at) values
  ('c5000000-0000-4000-8000-000000000050', 'aminetou@example.mr', '{}', now(), now()),
  ('c5000000-0000-4000-8000-000000000051', 'sidi@example.mr', '{}', now(), now());
select get_or_create_wallet('c5000000-0000-4000-8000-000000000050', 500);

-- one cycle writes what it wrote before: a reservation inserted and settled, three ledger rows, one usage
-- row, the wallet twice (as bench:wallet counts it)
create temp table before_cycle on commit drop as
  select relname, n_tup_ins, n_tup_upd from pg_stat_xact_user_tables where schemaname = 'public';
create temp table held on commit drop as select * from reserve_tokens('c5000000-0000-4000-8000-000000000050', 10, 'cycle-50', 300, 50);
create temp table settled on commit drop as select * from finalize_reservation((select id from held), 7, 'cycle-50', 'manual', 2);
select is((select string_agg(s.relname || ' +' || (s.n_tup_ins - coalesce(b.n_tup_ins, 0)) || ' ~' || (s.n_tup_upd - coalesce(b.n_tup_upd, 0)), ', '
                             order by s.relname)
             from pg_stat_xact_user_tables s left join before_cycle b on b.relname = s.relname
            where s.schemaname = 'public' and s.relname in ('reservations', 'token_ledger', 'usage_log', 'wallets')),
          'reservations +1 ~1, token_ledger +3 ~0, usage_log +1 ~0, wallets +0 ~2',
          'a cycle writes the rows it wrote before');
select results_eq($$ select reason, delta, balance_after from token_ledger where request_id = 'cycle-50' order by id $$,
                  $$ values ('reservation_hold', -10::bigint, 490::bigint), ('reservation_release', 10::bigint, 500::bigint),
                            ('agent_chat', -7::bigint, 493::bigint) $$,
                  'the ledger holds, releases, then charges -actual as agent_chat, each with the balance after it');
select is((select ledger_entry_id from settled), (select id from token_ledger where request_id = 'cycle-50' and reason = 'agent_chat'),
          'finalize returns the agent_chat entry');
select is((select (charged, refunded, uncovered, token_balance)::text from settled), '(7,3,0,493)', 'and the settlement''s figures');
select is((select token_balance from wallets where user_id = 'c5000000-0000-4000-8000-000000000050'),
          (select sum(delta) from token_ledger where user_id = 'c5000000-0000-4000-8000-000000000050')::bigint,
          'the balance is the sum of the ledger');

-- a settlement that charges nothing releases the hold and writes no charge
create temp table free on commit drop as select * from reserve_tokens('c5000000-0000-4000-8000-000000000050', 10, 'free-50', 300, 50);
create temp table free_settled on commit drop as select * from finalize_reservation((select id from free), 0, 'free-50', 'released', 2);
select is((select (ledger_entry_id is null, charged, token_balance)::text from free_settled), '(t,0,493)', 'a settlement at 0 returns no ledger entry');
select results_eq($$ select reason from token_ledger where request_id = 'free-50' order by id $$,
                  $$ values ('reservation_hold'), ('reservation_release') $$, 'and writes the release only');

select is((select string_agg(p.proname || ':' || l.lanname, ', ' order by p.proname) from pg_proc p join pg_language l on l.oid = p.prolang
            where p.pronamespace = 'public'::regnamespace and p.proname in ('finalize_reservation', 'finalize_chat_turn')),
          'finalize_chat_turn:plpgsql, finalize_reservation:plpgsql', 'finalize is PL/pgSQL: its plan is kept, not made again at each call');

-- check_wallet short of the estimate after refunding a due hold: refused, and the refund stays (it was
-- undone with the subtransaction that caught PT402)
select get_or_create_wallet('c5000000-0000-4000-8000-000000000051', 50);
create temp table due on commit drop as select * from reserve_tokens('c5000000-0000-4000-8000-000000000051', 40, 'due-50', 300, 50);
update reservations set expires_at = now() - interval '1 second' where id = (select id from due);
create temp table short on commit drop as
  select * from begin_chat_turn('c5000000-0000-4000-8000-000000000051', 'turn-50', array[60, 60, 60], array[0, 0, 0], 300, 50);
select is((select (refused, token_balance, reservation_id is null)::text from short), '(insufficient_balance,50,t)',
          'a balance short of the estimate even with the due hold refunded is refused, with the balance after the refund');
select is((select status from reservations where id = (select id from due)), 'expired', 'the due hold is expired');
select is((select count(*)::integer from token_ledger where reservation_id = (select id from due) and reason = 'reservation_expired'), 1,
          'with its refund in the ledger');

-- what the dropped checks said is still true of everything the RPCs wrote
select throws_ok($$ select * from finalize_reservation((select id from reserve_tokens('c5000000-0000-4000-8000-000000000050', 5)), 3, null, 'manual', -1) $$,
                 'PT400', null, 'a negative cap multiplier is refused (a negative charge was refused by the check)');
select is((select count(*)::integer from reservations
            where estimated <= 0 or actual < 0 or charged < 0 or (status = 'reserved') <> (finalized_at is null)), 0,
          'reservations: estimates above 0, actuals and charges not below 0, finalized_at set exactly when settled or expired');
select is((select count(*)::integer from token_ledger where delta = 0 or balance_after < 0), 0, 'ledger: no entry of 0, no balance below 0');
select is((select string_agg(conname, ', ' order by conname) from pg_constraint
            where conrelid in ('public.reservations'::regclass, 'public.token_ledger'::regclass, 'public.wallets'::regclass) and contype = 'c'),
          'reservations_status_check, token_ledger_reason_check, wallets_subscription_tier_check, wallets_token_balance_check',
          'the balance''s check and the allowed values stay');

select col_is_pk('public', 'usage_log', 'reservation_id', 'a usage row is keyed by its reservation');

select * from finish();
rollback;
