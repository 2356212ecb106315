-- Wallet rows: a user reads only their own; nobody but the RPCs writes.
begin;
create extension if not exists pgtap with schema extensions;
set local search_path = public, extensions;
select plan(12);

insert into auth.users (id, email, raw_app_meta_data, created_at, updated_at) values
  ('a1000000-0000-4000-8000-000000000001', 'lalla@example.mr', '{}', now(), now()),
  ('b2000000-0000-4000-8000-000000000002', 'yahya@example.mr', '{}', now(), now());
select * from reserve_tokens('a1000000-0000-4000-8000-000000000001', 5);
select * from reserve_tokens('b2000000-0000-4000-8000-000000000002', 5);
select * from log_expense('api_cost', 12.50, 'USD', 'embeddings', null, 'service_role');

select set_config('role', 'authenticated', true);
select set_config('request.jwt.claims', '{"sub":"a1000000-0000-4000-8000-000000000001","role":"authenticated","app_metadata":{"role":"student"}}', true);

select results_eq($$ select user_id::text from wallets $$, $$ values ('a1000000-0000-4000-8000-000000000001') $$, 'a student sees only their own wallet');
select results_eq($$ select distinct user_id::text from reservations $$, $$ values ('a1000000-0000-4000-8000-000000000001') $$, 'only their own reservations');
select results_eq($$ select distinct user_id::text from token_ledger $$, $$ values ('a1000000-0000-4000-8000-000000000001') $$, 'only their own ledger rows');
select throws_ok($$ select * from financial_transactions $$, '42501', null, 'and cannot read financial transactions');
select throws_ok($$ update wallets set token_balance = 1000000 $$, '42501', null, 'a student cannot change a balance');
select throws_ok($$ insert into reservations (user_id, estimated, expires_at) values ('a1000000-0000-4000-8000-000000000001', 1, now()) $$, '42501', null,
  'a student cannot insert a reservation');
select throws_ok($$ update reservations set status = 'finalized' $$, '42501', null, 'a student cannot change a reservation');
select throws_ok($$ insert into token_ledger (user_id, delta, reason, balance_after) values ('a1000000-0000-4000-8000-000000000001', 100, 'topup', 100) $$, '42501', null,
  'a student cannot write the ledger');
select throws_ok($$ select * from reserve_tokens('a1000000-0000-4000-8000-000000000001', 1) $$, '42501', null, 'a student cannot call the money RPCs');
select throws_ok($$ select * from top_up('a1000000-0000-4000-8000-000000000001', 100, 1, 'MRU', 'cash', null, 'me') $$, '42501', null, 'nor top up');

select set_config('role', 'anon', true);
select set_config('request.jwt.claims', '', true);
select throws_ok($$ select * from wallets $$, '42501', null, 'anonymous callers read no wallets');
select throws_ok($$ select * from get_or_create_wallet('a1000000-0000-4000-8000-000000000001', 50) $$, '42501', null, 'nor call the RPCs');

select * from finish();
rollback;
