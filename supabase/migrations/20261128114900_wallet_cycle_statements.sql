-- The wallet cycle (reserve_tokens, then finalize_reservation; and the chat's begin_chat_turn and
-- finalize_chat_turn, which share them) with less work per call, the same rows written (docs/
-- accounts-and-wallet.md, "What a cycle costs", has the measurements):
-- - each RPC's steps as few plain statements: reserve's check for due reservations inside its debit; the
--   reservation and its wallet locked by one statement; the ledger's release and charge in one insert;
-- - finalize_reservation and finalize_chat_turn in PL/pgSQL: as SQL functions around the settlement they
--   were parsed and planned again at every call (a security definer SQL function is never inlined);
-- - begin_chat_turn without a subtransaction: under its wallet lock it refuses a short balance itself;
-- - the check constraints that only restate what the one writer of their columns establishes just
--   before it writes go: PostgreSQL reads every check of a table back from its stored text at each
--   statement that writes the table, a third of a cycle's instructions. The balance's check (the
--   invariant) and the sets of allowed values stay;
-- - usage_log's primary key is its reservation (one row per reservation, as its unique index already
--   held); the index on its id, which no query reads, goes.

-- Each of these restated its writer: a reservation's estimate is refused below 1 (PT400) by
-- reserve_tokens, its actual below 0 by the settlement, which computes the charge from them and the
-- balance (never below 0) and sets status and finalized_at together, as the expiry does; a ledger row's
-- delta is never 0 (a hold or a release of an estimate, a charge above 0, a positive top-up or bonus)
-- and its balance_after is the wallet's balance, which keeps its own check.
alter table public.reservations
  drop constraint if exists reservations_estimated_check,
  drop constraint if exists reservations_actual_check,
  drop constraint if exists reservations_charged_check,
  drop constraint if exists reservations_check;
alter table public.token_ledger
  drop constraint if exists token_ledger_delta_check,
  drop constraint if exists token_ledger_balance_after_check;

-- why: the settlement writes one usage row per reservation and finds it by its reservation; nothing
-- reads a usage row by its id
do $$
begin
  if to_regclass('public.usage_log_reservation_idx') is not null then
    alter table public.usage_log drop constraint usage_log_pkey;
    alter table public.usage_log add constraint usage_log_pkey primary key using index usage_log_reservation_idx;
  end if;
end;
$$;

-- why: check_wallet of a chat turn: holds the estimate, or changes nothing at all (PT402). The debit is
-- taken at once when none of the user's reservations is due; otherwise (or when the balance falls short,
-- or on first use) the due ones are refunded and the wallet made (with the bonus) first, and the debit
-- is tried once more.
create or replace function public.reserve_tokens(p_user uuid, p_estimate integer, p_request_id text default null,
                                                 p_ttl_seconds integer default 300, p_bonus integer default 50)
returns public.reservations
language plpgsql security definer set search_path = '' as $$
declare
  balance bigint;
  res public.reservations;
begin
  if p_estimate is null or p_estimate <= 0 then
    raise exception 'estimate must be a positive number of tokens' using errcode = 'PT400';
  end if;
  update public.wallets w set token_balance = w.token_balance - p_estimate, updated_at = now()
   where w.user_id = p_user and w.token_balance >= p_estimate
     and not exists (select 1 from public.reservations d where d.user_id = p_user and d.status = 'reserved' and d.expires_at <= now())
  returning w.token_balance into balance;
  if not found then
    perform private.expire_due(p_user, now());
    perform private.ensure_wallet(p_user, p_bonus);
    update public.wallets w set token_balance = w.token_balance - p_estimate, updated_at = now()
     where w.user_id = p_user and w.token_balance >= p_estimate
    returning w.token_balance into balance;
    if not found then
      raise exception 'insufficient balance: % tokens needed, % available', p_estimate,
        (select w.token_balance from public.wallets w where w.user_id = p_user) using errcode = 'PT402';
    end if;
  end if;
  insert into public.reservations (user_id, estimated, request_id, expires_at)
  values (p_user, p_estimate, p_request_id, now() + make_interval(secs => p_ttl_seconds))
  returning * into res;
  insert into public.token_ledger (user_id, delta, reason, request_id, reservation_id, balance_after)
  values (p_user, -p_estimate, 'reservation_hold', p_request_id, res.id, balance);
  return res;
end;
$$;

-- why: settles a reservation exactly once (the charge as finalize_reservation in the wallet baseline
-- says): the reservation and its wallet read and locked in one statement (in that order), then the
-- wallet, the reservation, the usage row (with the turn's facts) and the ledger's release and charge (one
-- insert, in that order; the charge is the ledger sequence's last value).
create or replace function private.settle_reservation(p_reservation uuid, p_actual integer, p_request_id text, p_kind text,
                                                      p_cap_multiplier numeric, p_characters integer, p_model text, p_details jsonb)
returns table (reservation_id uuid, user_id uuid, status text, estimated integer, actual integer, charged integer,
               refunded integer, uncovered integer, token_balance bigint, ledger_entry_id bigint, request_id text)
language plpgsql security definer set search_path = '' as $$
declare
  owner uuid;
  estimate integer;
  held_for text;
  state text;
  expiry timestamptz;
  balance bigint;
  released bigint;
  capped integer;
  charge integer;
  rid text;
begin
  if p_actual is null or p_actual < 0 then
    raise exception 'actual must be zero or more tokens' using errcode = 'PT400';
  end if;
  if p_cap_multiplier < 0 then
    raise exception 'the cap multiplier must be zero or more' using errcode = 'PT400';
  end if;
  select r.user_id, r.estimated, r.request_id, r.status, r.expires_at, w.token_balance
    into owner, estimate, held_for, state, expiry, balance
    from public.reservations r join public.wallets w on w.user_id = r.user_id
   where r.id = p_reservation
     for update of r, w;
  if not found then
    raise exception 'reservation % not found', p_reservation using errcode = 'PT404';
  end if;
  if state <> 'reserved' then
    raise exception 'reservation % is %, not reserved', p_reservation, state using errcode = 'PT409';
  end if;
  if expiry <= now() then
    raise exception 'reservation % has expired', p_reservation using errcode = 'PT409';
  end if;
  rid := coalesce(p_request_id, held_for, p_reservation::text);
  capped := least(p_actual, floor(estimate * p_cap_multiplier)::integer);
  charge := least(capped, balance + estimate);
  released := balance + estimate;
  balance := released - charge;
  update public.wallets w set token_balance = balance, updated_at = now() where w.user_id = owner;
  update public.reservations r set status = 'finalized', actual = p_actual, charged = charge, finalized_at = now()
   where r.id = p_reservation;
  insert into public.usage_log (request_id, user_id, reservation_id, kind, estimated, actual, charged, uncovered, characters, model, details)
  values (rid, owner, p_reservation, p_kind, estimate, p_actual, charge, capped - charge, p_characters, p_model,
          coalesce(p_details, '{}'::jsonb));
  insert into public.token_ledger (user_id, delta, reason, request_id, reservation_id, balance_after)
  select owner, e.delta, e.reason, rid, p_reservation, e.balance_after
    from (values (estimate::bigint, 'reservation_release', released), (-charge::bigint, 'agent_chat', balance)) e(delta, reason, balance_after)
   where e.delta <> 0;
  reservation_id := p_reservation;
  user_id := owner;
  status := 'finalized';
  estimated := estimate;
  actual := p_actual;
  charged := charge;
  refunded := greatest(estimate - charge, 0);
  uncovered := capped - charge;
  token_balance := balance;
  ledger_entry_id := case when charge > 0 then currval('public.token_ledger_id_seq'::regclass) end;
  request_id := rid;
  return next;
end;
$$;

-- why: the settlement (POST /wallet/internal/finalize), in PL/pgSQL: as a SQL function it was planned
-- again at every call
create or replace function public.finalize_reservation(p_reservation uuid, p_actual integer, p_request_id text default null,
                                                       p_kind text default 'chat', p_cap_multiplier numeric default 2)
returns table (reservation_id uuid, user_id uuid, status text, estimated integer, actual integer, charged integer,
               refunded integer, uncovered integer, token_balance bigint, ledger_entry_id bigint, request_id text)
language plpgsql security definer set search_path = '' as $$
begin
  return query select * from private.settle_reservation(p_reservation, p_actual, p_request_id, p_kind, p_cap_multiplier, null, null, null);
end;
$$;

-- why: a chat turn's settlement with its usage facts, in PL/pgSQL as finalize_reservation
create or replace function public.finalize_chat_turn(p_reservation uuid, p_actual integer, p_request_id text, p_kind text,
                                                     p_cap_multiplier numeric, p_characters integer, p_model text, p_details jsonb)
returns table (reservation_id uuid, user_id uuid, status text, estimated integer, actual integer, charged integer,
               refunded integer, uncovered integer, token_balance bigint, ledger_entry_id bigint, request_id text)
language plpgsql security definer set search_path = '' as $$
begin
  return query select * from private.settle_reservation(p_reservation, p_actual, p_request_id, p_kind, p_cap_multiplier, p_characters,
                                                        p_model, p_details);
end;
$$;

-- check_wallet (begin_chat_turn, as 20261128082444_chat_day_counter.sql defines it) without a
-- subtransaction: under the wallet's lock it knows whether the hold can be taken (the refunds of its
-- due reservations first, as reserve_tokens takes them), so a balance short of the estimate is refused
-- without raising and catching PT402.
create or replace function public.begin_chat_turn(p_user uuid, p_request_id text, p_estimates integer[], p_daily_limits integer[],
                                                  p_ttl_seconds integer, p_bonus integer, p_address text default null,
                                                  p_address_cap integer default 0)
returns table (tier text, hint_level integer, turns integer, token_balance bigint, estimated integer,
               reservation_id uuid, expires_at timestamptz, refused text)
language plpgsql security definer set search_path = '' as $$
declare
  w public.wallets;
  i integer;
  daily integer;
  res public.reservations;
begin
  select * into w from public.wallets wl where wl.user_id = p_user for update;
  if not found then
    perform private.ensure_wallet(p_user, p_bonus, p_address, p_address_cap);
    select * into w from public.wallets wl where wl.user_id = p_user for update;
  end if;
  tier := w.subscription_tier;
  i := case w.subscription_tier when 'free' then 1 when 'standard' then 2 else 3 end;
  estimated := p_estimates[i];
  daily := coalesce(p_daily_limits[i], 0);
  hint_level := coalesce((select p.hint_level from public.profiles p where p.id = p_user), 3);
  -- the day's turns, only for a tier that has a daily limit (turns is null otherwise): the day's
  -- counter, and the turns in flight
  if daily > 0 then
    turns := coalesce((select d.turns from private.chat_days d where d.user_id = p_user and d.day = (now() at time zone 'utc')::date), 0)
           + (select count(*) from public.reservations r where r.user_id = p_user and r.status = 'reserved' and r.expires_at > now());
  end if;
  if daily > 0 and turns >= daily then
    refused := 'daily_limit';
    token_balance := w.token_balance;
    return next;
    return;
  end if;
  if w.token_balance < estimated then
    perform private.expire_due(p_user, now());
    token_balance := (select wl.token_balance from public.wallets wl where wl.user_id = p_user);
    if token_balance < estimated then
      refused := 'insufficient_balance';
      return next;
      return;
    end if;
  end if;
  res := public.reserve_tokens(p_user, estimated, p_request_id, p_ttl_seconds, p_bonus);
  reservation_id := res.id;
  expires_at := res.expires_at;
  token_balance := (select wl.token_balance from public.wallets wl where wl.user_id = p_user);
  return next;
end;
$$;
