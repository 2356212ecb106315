-- The wallet: RLS, the append-only ledger, and each RPC's rules.
begin;
create extension if not exists pgtap with schema extensions;
set local search_path = public, extensions;
select plan(32);

insert into auth.users (id, email, raw_app_meta_data, created_at, updated_at) values
  ('a1000000-0000-4000-8000-000000000001', 'lalla@example.mr', '{}', now(), now()),
  ('b2000000-0000-4000-8000-000000000002', 'yahya@example.mr', '{}', now(), now());

-- get_or_create_wallet: the bonus once, with its ledger row
select is((select token_balance from get_or_create_wallet('a1000000-0000-4000-8000-000000000001', 50)), 50::bigint,
  'the first fetch creates the wallet with the 50-token welcome bonus');
select is((select token_balance from get_or_create_wallet('a1000000-0000-4000-8000-000000000001', 50)), 50::bigint,
  'a second fetch grants nothing more');
select is((select count(*)::int from token_ledger where user_id = 'a1000000-0000-4000-8000-000000000001' and reason = 'welcome_bonus'), 1,
  'exactly one welcome_bonus ledger row');
select throws_ok($$ select * from get_or_create_wallet('c3000000-0000-4000-8000-000000000003', 50) $$, 'PT404', null,
  'an unknown user has no wallet');

-- reserve_tokens
create temp table r1 on commit drop as select * from reserve_tokens('a1000000-0000-4000-8000-000000000001', 20, 'req-1');
select is((select status from r1), 'reserved', 'a reserve within the balance is reserved');
select is((select token_balance from wallets where user_id = 'a1000000-0000-4000-8000-000000000001'), 30::bigint,
  'the estimate leaves the balance at once');
select is((select delta from token_ledger where reservation_id = (select id from r1)), -20::bigint,
  'the hold is in the ledger as -estimate');
select throws_ok($$ select * from reserve_tokens('a1000000-0000-4000-8000-000000000001', 31, 'req-2') $$, 'PT402', null,
  'a reserve above the balance is refused with PT402');
select is((select token_balance from wallets where user_id = 'a1000000-0000-4000-8000-000000000001'), 30::bigint,
  'a refused reserve deducts nothing');
select is((select count(*)::int from reservations where user_id = 'a1000000-0000-4000-8000-000000000001'), 1,
  'a refused reserve leaves no reservation');
select throws_ok($$ select * from reserve_tokens('a1000000-0000-4000-8000-000000000001', 0) $$, 'PT400', null, 'a zero estimate is refused');

-- finalize_reservation: refund below the estimate
create temp table f1 on commit drop as select * from finalize_reservation((select id from r1), 8, null, 'chat', 2);
select is((select charged from f1), 8, 'the charge is the actual cost when below the estimate');
select is((select refunded from f1), 12, 'the difference is refunded');
select is((select token_balance from wallets where user_id = 'a1000000-0000-4000-8000-000000000001'), 42::bigint, 'balance 50 - 8');
select is((select delta from token_ledger where reservation_id = (select id from r1) and reason = 'agent_chat'), -8::bigint,
  'the ledger has -actual as agent_chat');
select is((select count(*)::int from usage_log where reservation_id = (select id from r1)), 1, 'one usage log row');
select is((select request_id from token_ledger where reservation_id = (select id from r1) and reason = 'agent_chat'),
  (select request_id from usage_log where reservation_id = (select id from r1)), 'the ledger request_id points at the usage log');
select throws_ok(format('select * from finalize_reservation(%L, 8)', (select id from r1)), 'PT409', null,
  'a second finalize is a conflict');
select is((select token_balance from wallets where user_id = 'a1000000-0000-4000-8000-000000000001'), 42::bigint,
  'and changes nothing');

-- finalize above the estimate: capped at 2x, and never below zero
create temp table r2 on commit drop as select * from reserve_tokens('a1000000-0000-4000-8000-000000000001', 10);
select is((select charged from finalize_reservation((select id from r2), 25)), 20, 'the charge is capped at twice the estimate');
select is((select token_balance from wallets where user_id = 'a1000000-0000-4000-8000-000000000001'), 22::bigint, 'balance 42 - 20');
create temp table r3 on commit drop as select * from reserve_tokens('a1000000-0000-4000-8000-000000000001', 20);
create temp table f3 on commit drop as select * from finalize_reservation((select id from r3), 40);
select is((select charged from f3), 22, 'above the estimate, only what the balance covers is charged');
select is((select uncovered from f3), 18, 'the rest is recorded as uncovered');
select is((select token_balance from wallets where user_id = 'a1000000-0000-4000-8000-000000000001'), 0::bigint, 'the balance stops at zero');

-- expire_reservations
create temp table r4 on commit drop as select * from reserve_tokens('b2000000-0000-4000-8000-000000000002', 15);
select is((select expired from expire_reservations(now() + interval '4 minutes')), 0, 'a reservation younger than the TTL stays');
select is((select expired from expire_reservations(now() + interval '5 minutes 1 second')), 1, 'past the TTL it expires');
select is((select token_balance from wallets where user_id = 'b2000000-0000-4000-8000-000000000002'), 50::bigint, 'the estimate is refunded');
select is((select reason from token_ledger where reservation_id = (select id from r4) order by id desc limit 1), 'reservation_expired',
  'the refund is in the ledger as reservation_expired');
select throws_ok(format('select * from finalize_reservation(%L, 5)', (select id from r4)), 'PT409', null,
  'a finalize after expiry is a conflict');

-- the ledger equation holds for both users
select is((select count(*)::int from wallets w where w.token_balance <> (select sum(delta) from token_ledger l where l.user_id = w.user_id)), 0,
  'every wallet balance equals the sum of its ledger deltas');

-- the ledger is append-only, for everyone
select throws_ok($$ update token_ledger set delta = 1000 $$, 'PT409', null, 'the ledger cannot be updated');
select throws_ok($$ delete from token_ledger $$, 'PT409', null, 'the ledger cannot be deleted from');

select * from finish();
rollback;
