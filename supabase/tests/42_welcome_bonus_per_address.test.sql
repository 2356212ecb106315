-- The welcome bonus's per-address daily allowance: a wallet made past it starts at 0 with its bonus
-- withheld, a later fetch from an address with room grants it once, and yesterday's counts are gone.
begin;
create extension if not exists pgtap with schema extensions;
set local search_path = public, extensions;
select plan(14);

insert into auth.users (id, email, raw_app_meta_data, created_at, updated_at)
select ('d4000000-0000-4000-8000-00000000000' || i)::uuid, 'eleve' || i || '@example.mr', '{}', now(), now() from generate_series(1, 6) i;

select is((select token_balance from get_or_create_wallet('d4000000-0000-4000-8000-000000000001', 50, 'loopback', 2)), 50::bigint,
  'the first wallet of an address gets the bonus');
select is((select token_balance from get_or_create_wallet('d4000000-0000-4000-8000-000000000002', 50, 'loopback', 2)), 50::bigint,
  'so does the second, with a cap of 2');
select is((select row(token_balance, welcome_withheld)::text from get_or_create_wallet('d4000000-0000-4000-8000-000000000003', 50, 'loopback', 2)),
  '(0,t)', 'the third starts at 0 with its bonus withheld');
select is((select count(*)::int from token_ledger where user_id = 'd4000000-0000-4000-8000-000000000003'), 0,
  'and has no ledger row: the ledger still adds up to the balance');
select is((select grants from private.welcome_grants where address_key = sha256(convert_to('loopback', 'UTF8'))), 2,
  'the address is counted by its SHA-256 key, never stored as written');
select is((select count(*)::int from private.welcome_grants where address_key = convert_to('loopback', 'UTF8')), 0,
  'no row holds the address itself');

select is((select row(token_balance, welcome_withheld)::text from get_or_create_wallet('d4000000-0000-4000-8000-000000000003', 50, 'loopback', 2)),
  '(0,t)', 'a fetch from the same address the same day grants nothing');
select is((select row(token_balance, welcome_withheld)::text from get_or_create_wallet('d4000000-0000-4000-8000-000000000003', 50, '198.51.100.9', 2)),
  '(50,f)', 'a fetch from an address with room grants the withheld bonus');
select is((select token_balance from get_or_create_wallet('d4000000-0000-4000-8000-000000000003', 50, '198.51.100.10', 2)), 50::bigint,
  'once: another fetch adds nothing');
select is((select array_agg(row(delta, reason, balance_after)::text) from token_ledger where user_id = 'd4000000-0000-4000-8000-000000000003'),
  array['(50,welcome_bonus,50)'], 'one welcome_bonus row, with the balance after it');

-- a new day: yesterday's counts are swept as the first slot of today is taken
update private.welcome_grants set day = day - 1;
select is((select token_balance from get_or_create_wallet('d4000000-0000-4000-8000-000000000004', 50, 'loopback', 2)), 50::bigint,
  'the next day the address has its allowance again');
select is((select count(*)::int from private.welcome_grants where day < (now() at time zone 'utc')::date), 0,
  'and the counts of days gone are deleted');

-- a caller that names no address (an admin top-up, the internal reserve) or a cap of 0 is not counted
select is((select array_agg(token_balance order by 1) from (
  select (get_or_create_wallet('d4000000-0000-4000-8000-000000000005', 50, null, 1)).token_balance
  union all select (get_or_create_wallet('d4000000-0000-4000-8000-000000000006', 50, 'loopback', 0)).token_balance) b),
  array[50, 50]::bigint[], 'no address or a cap of 0: the bonus as before');
select ok(not has_function_privilege('authenticated', 'private.take_welcome_slot(text, integer)', 'execute')
          and not has_function_privilege('anon', 'private.grant_withheld_welcome(uuid, integer, text, integer)', 'execute'),
  'the API roles cannot take a slot or grant a bonus themselves');

select * from finish();
rollback;
