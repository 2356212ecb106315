-- The token wallet: balances, reservations, an append-only ledger, the usage log and financial
-- transactions. Every money movement is one security-definer RPC, executable by service_role only, that
-- locks what it changes (reservations before the wallet, always in that order).
--
-- The ledger equation, true at every instant for every wallet:
--     wallets.token_balance = sum(token_ledger.delta) for that user
-- welcome_bonus (+50) and topup (+n) add; a reserve writes a reservation_hold (-estimate); a finalize
-- writes reservation_release (+estimate) then agent_chat (-charge); an expiry writes
-- reservation_expired (+estimate). So held tokens are already out of the balance, and
-- tokens in (bonus + top-ups) = balances + tokens charged.

-- why: one balance per user; never negative, by constraint.
create table public.wallets (
  user_id uuid primary key references auth.users (id) on delete cascade,
  token_balance bigint not null default 0 check (token_balance >= 0),
  subscription_tier text not null default 'free' check (subscription_tier in ('free', 'standard', 'premium')),
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);

-- why: the tokens held for one chat turn between reserve and finalize (or expiry).
create table public.reservations (
  id uuid primary key default gen_random_uuid(),
  user_id uuid not null references public.wallets (user_id) on delete cascade,
  estimated integer not null check (estimated > 0),
  actual integer check (actual >= 0),
  charged integer check (charged >= 0),
  status text not null default 'reserved' check (status in ('reserved', 'finalized', 'expired')),
  request_id text,
  created_at timestamptz not null default now(),
  expires_at timestamptz not null,
  finalized_at timestamptz,
  check ((status = 'reserved') = (finalized_at is null))
);
create index reservations_user_created_idx on public.reservations (user_id, created_at desc);
create index reservations_due_idx on public.reservations (expires_at) where status = 'reserved';
create index reservations_user_due_idx on public.reservations (user_id, expires_at) where status = 'reserved';

-- why: every balance change, forever. No foreign key to the user: financial history outlives accounts.
create table public.token_ledger (
  id bigint generated always as identity primary key,
  user_id uuid not null,
  delta bigint not null check (delta <> 0),
  reason text not null check (reason in ('welcome_bonus', 'topup', 'reservation_hold', 'reservation_release', 'agent_chat', 'reservation_expired')),
  request_id text,
  reservation_id uuid,
  balance_after bigint not null check (balance_after >= 0),
  created_at timestamptz not null default now()
);
create index token_ledger_user_idx on public.token_ledger (user_id, id);

-- why: one row per billed turn (chat or manual finalize); the ledger's request_id points here. A chat
-- turn's row explains its charge: characters generated, the model, the path and the time each stage
-- took. A turn that fails before it answers (or whose client leaves before any text) is settled at 0 as
-- 'released': its row shows the attempt, and it does not count towards the daily limit.
create table public.usage_log (
  id bigint generated always as identity primary key,
  request_id text,
  user_id uuid not null,
  -- one row per reservation: finalize settles a reservation once, under its row lock
  reservation_id uuid not null,
  kind text not null check (kind in ('chat', 'clarify', 'manual', 'released')),
  estimated integer not null,
  actual integer not null,
  charged integer not null,
  -- the part of a capped charge above the estimate that the balance could not cover
  uncovered integer not null default 0,
  created_at timestamptz not null default now(),
  characters integer check (characters >= 0),
  model text,
  -- path, language, outcome, stage timings (ms), rerank mode, sources: what the turn did
  details jsonb not null default '{}'::jsonb
);
create index usage_log_user_day_idx on public.usage_log (user_id, created_at);
create unique index usage_log_reservation_idx on public.usage_log (reservation_id);

-- why: money in and out of the platform, in real currencies, as the admins record it. An
-- Idempotency-Key belongs to the caller that sent it (created_by: the admin's user id, service_role or
-- admin_key), as a payment API scopes keys by account: two admins who happen to choose the same key (a
-- date, a receipt number) make two top-ups, and one admin's key never replays or refuses another's.
create table public.financial_transactions (
  id uuid primary key default gen_random_uuid(),
  direction text not null check (direction in ('credit', 'debit')),
  type text not null check (type in ('topup', 'refund', 'promotion', 'api_cost', 'server_cost', 'infrastructure')),
  amount numeric(14, 2) not null check (amount >= 0),
  currency text not null check (currency in ('MRU', 'USD', 'EUR')),
  payment_method text check (payment_method in ('cash', 'bank_transfer', 'mobile_money', 'bankily', 'masrvi', 'sedad')),
  tokens bigint not null default 0 check (tokens >= 0),
  user_id uuid,
  reference text,
  description text,
  created_by text not null,
  idempotency_key text,
  request_hash text,
  ledger_entry_id bigint,
  created_at timestamptz not null default now(),
  check (direction = 'credit' or tokens = 0),
  constraint financial_transactions_idempotency_key_key unique (created_by, idempotency_key)
);
create index financial_transactions_created_idx on public.financial_transactions (created_at desc, id);
create index financial_transactions_user_idx on public.financial_transactions (user_id);

-- The ledger is append-only for everyone, the service role and owner included.
create function private.refuse_ledger_change() returns trigger
language plpgsql set search_path = '' as $$
begin
  raise exception 'token_ledger is append-only' using errcode = 'PT409';
end;
$$;
-- a trigger function: PostgreSQL refuses to call it other than as a trigger, so PUBLIC's EXECUTE (the
-- PostgreSQL default for a function) gives nothing
grant execute on function private.refuse_ledger_change() to public;
create trigger token_ledger_append_only before update or delete on public.token_ledger
  for each row execute function private.refuse_ledger_change();
create trigger token_ledger_no_truncate before truncate on public.token_ledger
  for each statement execute function private.refuse_ledger_change();

-- RLS: users read their own rows; every write goes through the RPCs below.
alter table public.wallets enable row level security;
alter table public.reservations enable row level security;
alter table public.token_ledger enable row level security;
alter table public.usage_log enable row level security;
alter table public.financial_transactions enable row level security;

revoke all on public.wallets, public.reservations, public.token_ledger, public.usage_log, public.financial_transactions from anon, authenticated;
grant select on public.wallets, public.reservations, public.token_ledger, public.usage_log to authenticated;
grant select on public.wallets, public.reservations, public.token_ledger, public.usage_log, public.financial_transactions to service_role;

create policy "Users read their own wallet" on public.wallets for select to authenticated using ((select auth.uid()) = user_id);
create policy "Users read their own reservations" on public.reservations for select to authenticated using ((select auth.uid()) = user_id);
create policy "Users read their own ledger" on public.token_ledger for select to authenticated using ((select auth.uid()) = user_id);
create policy "Users read their own usage" on public.usage_log for select to authenticated using ((select auth.uid()) = user_id);

-- The welcome bonus, at most so many times a day per client address: one address making accounts by
-- the dozen does not make tokens by the dozen. A wallet created past its address's daily cap starts at 0
-- with its bonus withheld, not lost: a later balance fetch from an address under its cap (another day,
-- another network) grants it, once. The address is kept only as a SHA-256 key with its UTC day, and rows
-- of days gone are swept as new ones come. A caller that passes no address (the service role's own
-- calls: an admin top-up, the internal reserve) or a cap of 0 is not counted.
create table private.welcome_grants (
  address_key bytea not null,
  day date not null,
  grants integer not null check (grants > 0),
  primary key (address_key, day)
);

create table private.welcome_withheld (
  user_id uuid primary key references auth.users (id) on delete cascade,
  withheld_at timestamptz not null default now()
);

alter table private.welcome_grants enable row level security;
alter table private.welcome_withheld enable row level security;
revoke all on private.welcome_grants, private.welcome_withheld from public, anon, authenticated;

-- ---------------------------------------------------------------------------------------------------
-- Internal helpers (private schema, not callable through the API).

-- why: refunds a user's reservations that passed their expiry; called first by every wallet RPC, so
-- correctness never waits for a scheduler. Locks the reservations, then the wallet.
create function private.expire_due(p_user uuid, p_now timestamptz, out expired integer, out tokens bigint)
language plpgsql security definer set search_path = '' as $$
declare
  r record;
  new_balance bigint;
begin
  expired := 0;
  tokens := 0;
  for r in
    select id, user_id, estimated from public.reservations
     where status = 'reserved' and expires_at <= p_now and (p_user is null or user_id = p_user)
     order by expires_at
     for update skip locked
  loop
    update public.reservations set status = 'expired', finalized_at = p_now where id = r.id;
    update public.wallets set token_balance = token_balance + r.estimated, updated_at = now()
     where user_id = r.user_id returning token_balance into new_balance;
    insert into public.token_ledger (user_id, delta, reason, reservation_id, balance_after)
    values (r.user_id, r.estimated, 'reservation_expired', r.id, new_balance);
    expired := expired + 1;
    tokens := tokens + r.estimated;
  end loop;
end;
$$;

-- why: one bonus of an address's daily allowance, taken or refused under the counter row's lock (so racing
-- sign-ups from one address cannot pass the cap together).
create function private.take_welcome_slot(p_address text, p_cap integer) returns boolean
language plpgsql security definer set search_path = '' as $$
declare
  today date := (now() at time zone 'utc')::date;
  taken boolean;
begin
  if p_address is null or coalesce(p_cap, 0) <= 0 then
    return true;
  end if;
  delete from private.welcome_grants where day < today;
  insert into private.welcome_grants as g (address_key, day, grants)
  values (sha256(convert_to(p_address, 'UTF8')), today, 1)
  on conflict (address_key, day) do update set grants = g.grants + 1 where g.grants < p_cap
  returning true into taken;
  return coalesce(taken, false);
end;
$$;

-- why: the wallet, created on first use exactly once (the primary key decides between racing first
-- fetches), with the welcome bonus and its ledger row when the address's allowance has room, else with
-- the bonus withheld for a later fetch.
create function private.ensure_wallet(p_user uuid, p_bonus integer, p_address text default null, p_address_cap integer default 0)
returns void
language plpgsql security definer set search_path = '' as $$
declare
  created boolean;
begin
  if not exists (select 1 from auth.users where id = p_user) then
    raise exception 'user % not found', p_user using errcode = 'PT404';
  end if;
  insert into public.wallets (user_id, token_balance) values (p_user, 0)
  on conflict (user_id) do nothing
  returning true into created;
  if created and p_bonus > 0 then
    if private.take_welcome_slot(p_address, p_address_cap) then
      update public.wallets set token_balance = p_bonus where user_id = p_user;
      insert into public.token_ledger (user_id, delta, reason, balance_after) values (p_user, p_bonus, 'welcome_bonus', p_bonus);
    else
      insert into private.welcome_withheld (user_id) values (p_user) on conflict (user_id) do nothing;
    end if;
  end if;
end;
$$;

-- why: a bonus withheld at creation, granted once by a fetch whose address has room; the withheld row's
-- lock makes two racing fetches grant it once.
create function private.grant_withheld_welcome(p_user uuid, p_bonus integer, p_address text, p_address_cap integer)
returns void
language plpgsql security definer set search_path = '' as $$
declare
  balance bigint;
begin
  perform 1 from private.welcome_withheld where user_id = p_user for update;
  if not found or p_bonus <= 0 or not private.take_welcome_slot(p_address, p_address_cap) then
    return;
  end if;
  delete from private.welcome_withheld where user_id = p_user;
  update public.wallets set token_balance = token_balance + p_bonus, updated_at = now()
   where user_id = p_user returning token_balance into balance;
  insert into public.token_ledger (user_id, delta, reason, balance_after) values (p_user, p_bonus, 'welcome_bonus', balance);
end;
$$;

-- ---------------------------------------------------------------------------------------------------
-- The RPCs.

-- why: GET /wallet/balance: the wallet (created with the bonus on first fetch, or granted the bonus it
-- was created without), its pending holds, and whether a bonus is still withheld.
create function public.get_or_create_wallet(p_user uuid, p_bonus integer default 50, p_address text default null,
                                            p_address_cap integer default 0)
returns table (user_id uuid, token_balance bigint, subscription_tier text, pending_count integer, pending_tokens bigint,
               created_at timestamptz, welcome_withheld boolean)
language plpgsql security definer set search_path = '' as $$
begin
  perform private.expire_due(p_user, now());
  perform private.ensure_wallet(p_user, p_bonus, p_address, p_address_cap);
  perform private.grant_withheld_welcome(p_user, p_bonus, p_address, p_address_cap);
  return query
    select w.user_id, w.token_balance, w.subscription_tier,
           (select count(*)::integer from public.reservations r where r.user_id = w.user_id and r.status = 'reserved'),
           (select coalesce(sum(r.estimated), 0)::bigint from public.reservations r where r.user_id = w.user_id and r.status = 'reserved'),
           w.created_at,
           exists (select 1 from private.welcome_withheld h where h.user_id = w.user_id)
      from public.wallets w where w.user_id = p_user;
end;
$$;

-- why: check_wallet of a chat turn: holds the estimate, or changes nothing at all (PT402).
create function public.reserve_tokens(p_user uuid, p_estimate integer, p_request_id text default null,
                                      p_ttl_seconds integer default 300, p_bonus integer default 50)
returns public.reservations
language plpgsql security definer set search_path = '' as $$
declare
  new_balance bigint;
  res public.reservations;
begin
  if p_estimate is null or p_estimate <= 0 then
    raise exception 'estimate must be a positive number of tokens' using errcode = 'PT400';
  end if;
  if exists (select 1 from public.reservations where user_id = p_user and status = 'reserved' and expires_at <= now()) then
    perform private.expire_due(p_user, now());
  end if;
  update public.wallets set token_balance = token_balance - p_estimate, updated_at = now()
   where user_id = p_user and token_balance >= p_estimate
  returning token_balance into new_balance;
  if not found then
    -- first use: create the wallet (with the bonus), then try once more
    perform private.ensure_wallet(p_user, p_bonus);
    update public.wallets set token_balance = token_balance - p_estimate, updated_at = now()
     where user_id = p_user and token_balance >= p_estimate
    returning token_balance into new_balance;
  end if;
  if not found then
    raise exception 'insufficient balance: % tokens needed, % available', p_estimate,
      (select token_balance from public.wallets where user_id = p_user) using errcode = 'PT402';
  end if;
  insert into public.reservations (user_id, estimated, request_id, expires_at)
  values (p_user, p_estimate, p_request_id, now() + make_interval(secs => p_ttl_seconds))
  returning * into res;
  insert into public.token_ledger (user_id, delta, reason, request_id, reservation_id, balance_after)
  values (p_user, -p_estimate, 'reservation_hold', p_request_id, res.id, new_balance);
  return res;
end;
$$;

-- why: settles a reservation exactly once. The charge is min(actual, cap × estimate); above the
-- estimate it is taken only as far as the balance covers it (never negative, never a failure: the rest
-- is recorded as uncovered in the usage log). A reservation that is not reserved, or past its expiry,
-- is a conflict (PT409) and nothing changes.
create function public.finalize_reservation(p_reservation uuid, p_actual integer, p_request_id text default null,
                                            p_kind text default 'chat', p_cap_multiplier numeric default 2)
returns table (reservation_id uuid, user_id uuid, status text, estimated integer, actual integer, charged integer,
               refunded integer, uncovered integer, token_balance bigint, ledger_entry_id bigint, request_id text)
language plpgsql security definer set search_path = '' as $$
declare
  res public.reservations;
  capped integer;
  charge integer;
  balance bigint;
  entry bigint;
  rid text;
begin
  if p_actual is null or p_actual < 0 then
    raise exception 'actual must be zero or more tokens' using errcode = 'PT400';
  end if;
  select * into res from public.reservations where id = p_reservation for update;
  if not found then
    raise exception 'reservation % not found', p_reservation using errcode = 'PT404';
  end if;
  if res.status <> 'reserved' then
    raise exception 'reservation % is %, not reserved', p_reservation, res.status using errcode = 'PT409';
  end if;
  if res.expires_at <= now() then
    raise exception 'reservation % has expired', p_reservation using errcode = 'PT409';
  end if;
  rid := coalesce(p_request_id, res.request_id, res.id::text);
  select w.token_balance into balance from public.wallets w where w.user_id = res.user_id for update;
  capped := least(p_actual, floor(res.estimated * p_cap_multiplier)::integer);
  charge := least(capped, balance + res.estimated);
  balance := balance + res.estimated;
  insert into public.token_ledger (user_id, delta, reason, request_id, reservation_id, balance_after)
  values (res.user_id, res.estimated, 'reservation_release', rid, res.id, balance);
  balance := balance - charge;
  if charge > 0 then
    insert into public.token_ledger (user_id, delta, reason, request_id, reservation_id, balance_after)
    values (res.user_id, -charge, 'agent_chat', rid, res.id, balance)
    returning id into entry;
  end if;
  update public.wallets w set token_balance = balance, updated_at = now() where w.user_id = res.user_id;
  update public.reservations r set status = 'finalized', actual = p_actual, charged = charge, finalized_at = now() where r.id = res.id;
  insert into public.usage_log (request_id, user_id, reservation_id, kind, estimated, actual, charged, uncovered)
  values (rid, res.user_id, res.id, p_kind, res.estimated, p_actual, charge, capped - charge);
  return query select res.id, res.user_id, 'finalized'::text, res.estimated, p_actual, charge,
    greatest(res.estimated - charge, 0), capped - charge, balance, entry, rid;
end;
$$;

-- why: the expiry job (pg_cron on Supabase, an interval locally): refunds every reservation past its TTL.
create function public.expire_reservations(p_now timestamptz default now()) returns table (expired integer, tokens bigint)
language sql security definer set search_path = '' as $$
  select e.expired, e.tokens from private.expire_due(null, p_now) e
$$;

-- why: one user's stale reservations, refunded before their list is read.
create function public.expire_user_reservations(p_user uuid) returns table (expired integer, tokens bigint)
language sql security definer set search_path = '' as $$
  select e.expired, e.tokens from private.expire_due(p_user, now()) e
$$;

-- why: an admin top-up: balance, ledger and a credit/topup transaction in one transaction. The same
-- caller's same idempotency key replays the first result; with a different request it is refused (PT422).
create function public.top_up(p_user uuid, p_tokens integer, p_amount numeric, p_currency text, p_payment_method text,
                              p_reference text, p_created_by text, p_idempotency_key text default null,
                              p_request_hash text default null, p_bonus integer default 50)
returns table (transaction_id uuid, user_id uuid, tokens bigint, new_balance bigint, ledger_entry_id bigint, replayed boolean, created_at timestamptz)
language plpgsql security definer set search_path = '' as $$
declare
  prior public.financial_transactions;
  balance bigint;
  entry bigint;
  tx public.financial_transactions;
begin
  if p_tokens is null or p_tokens <= 0 then
    raise exception 'tokens must be positive' using errcode = 'PT400';
  end if;
  if p_idempotency_key is not null then
    perform pg_advisory_xact_lock(hashtextextended('top_up:' || p_created_by || ':' || p_idempotency_key, 0));
    select * into prior from public.financial_transactions f
     where f.created_by = p_created_by and f.idempotency_key = p_idempotency_key;
    if found then
      if prior.request_hash is distinct from p_request_hash then
        raise exception 'idempotency key % was used for a different request', p_idempotency_key using errcode = 'PT422';
      end if;
      return query select prior.id, prior.user_id, prior.tokens, l.balance_after, prior.ledger_entry_id, true, prior.created_at
        from public.token_ledger l where l.id = prior.ledger_entry_id;
      return;
    end if;
  end if;
  perform private.expire_due(p_user, now());
  perform private.ensure_wallet(p_user, p_bonus);
  update public.wallets w set token_balance = w.token_balance + p_tokens, updated_at = now()
   where w.user_id = p_user returning w.token_balance into balance;
  insert into public.token_ledger (user_id, delta, reason, balance_after) values (p_user, p_tokens, 'topup', balance)
  returning id into entry;
  insert into public.financial_transactions (direction, type, amount, currency, payment_method, tokens, user_id, reference,
                                             created_by, idempotency_key, request_hash, ledger_entry_id)
  values ('credit', 'topup', p_amount, p_currency, p_payment_method, p_tokens, p_user, p_reference,
          p_created_by, p_idempotency_key, p_request_hash, entry)
  returning * into tx;
  return query select tx.id, p_user, p_tokens::bigint, balance, entry, false, tx.created_at;
end;
$$;

-- why: a system expense (API, servers, infrastructure): a debit transaction, no wallet changes.
create function public.log_expense(p_type text, p_amount numeric, p_currency text, p_description text,
                                   p_reference text, p_created_by text, p_payment_method text default null)
returns public.financial_transactions
language plpgsql security definer set search_path = '' as $$
declare
  tx public.financial_transactions;
begin
  if p_type not in ('api_cost', 'server_cost', 'infrastructure') then
    raise exception 'expense type must be api_cost, server_cost or infrastructure' using errcode = 'PT400';
  end if;
  insert into public.financial_transactions (direction, type, amount, currency, payment_method, description, reference, created_by)
  values ('debit', p_type, p_amount, p_currency, p_payment_method, p_description, p_reference, p_created_by)
  returning * into tx;
  return tx;
end;
$$;

-- why: the chat enforces the tier's daily limit: billed turns (chat and clarifying) of this UTC day.
create function public.turns_today(p_user uuid) returns integer
language sql stable security definer set search_path = '' as $$
  select count(*)::integer from public.usage_log
   where user_id = p_user and kind in ('chat', 'clarify')
     and created_at >= date_trunc('day', now() at time zone 'utc') at time zone 'utc'
$$;

-- The expiry every minute where pg_cron is installed (20261101000100_foundation.sql); elsewhere the
-- server runs it on an interval. Either way every wallet RPC expires first.
do $$
begin
  if exists (select 1 from pg_extension where extname = 'pg_cron') then
    begin
      perform cron.schedule('expire-reservations', '* * * * *', 'select public.expire_reservations()');
    exception when others then
      raise notice 'pg_cron is not usable in this database (%); the server expires reservations on an interval', sqlerrm;
    end;
  end if;
end
$$;
