-- The welcome bonus, at most so many times a day per client address: one address making accounts by
-- the dozen no longer makes tokens by the dozen. A wallet created past its address's daily cap starts
-- at 0 with its bonus withheld, not lost: a later balance fetch from an address under its cap (another
-- day, another network) grants it, once. The address is kept only as a SHA-256 key with its UTC day,
-- and rows of days gone are swept as new ones come. A caller that passes no address (the service role's
-- own calls: an admin top-up, the internal reserve) or a cap of 0 is not counted.

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

drop function private.ensure_wallet(uuid, integer);

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

revoke all on function private.take_welcome_slot(text, integer), private.ensure_wallet(uuid, integer, text, integer),
  private.grant_withheld_welcome(uuid, integer, text, integer) from public, anon, authenticated;

drop function public.get_or_create_wallet(uuid, integer);

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

drop function public.begin_chat_turn(uuid, text, integer[], integer[], integer, integer);

-- why: check_wallet in one call, under the wallet's row lock: the tier, the hint level, the daily limit
-- (turns billed this UTC day plus turns in flight, so concurrent turns cannot pass it together) and the
-- reservation of the tier's estimate. Refusals are returned, not raised: 'daily_limit' or
-- 'insufficient_balance' (nothing reserved). Arrays are indexed by tier: free, standard, premium; a
-- daily limit of 0 is unlimited. A first turn creates the wallet under its address's welcome allowance.
create function public.begin_chat_turn(p_user uuid, p_request_id text, p_estimates integer[], p_daily_limits integer[],
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
  turns := (select count(*) from public.usage_log u
             where u.user_id = p_user and u.kind in ('chat', 'clarify')
               and u.created_at >= date_trunc('day', now() at time zone 'utc') at time zone 'utc')
         + (select count(*) from public.reservations r where r.user_id = p_user and r.status = 'reserved' and r.expires_at > now());
  if daily > 0 and turns >= daily then
    refused := 'daily_limit';
    token_balance := w.token_balance;
    return next;
    return;
  end if;
  begin
    res := public.reserve_tokens(p_user, estimated, p_request_id, p_ttl_seconds, p_bonus);
  exception when sqlstate 'PT402' then
    refused := 'insufficient_balance';
    token_balance := (select wl.token_balance from public.wallets wl where wl.user_id = p_user);
    return next;
    return;
  end;
  reservation_id := res.id;
  expires_at := res.expires_at;
  token_balance := (select wl.token_balance from public.wallets wl where wl.user_id = p_user);
  return next;
end;
$$;

revoke all on function public.get_or_create_wallet(uuid, integer, text, integer),
  public.begin_chat_turn(uuid, text, integer[], integer[], integer, integer, text, integer) from public, anon, authenticated;
grant execute on function public.get_or_create_wallet(uuid, integer, text, integer),
  public.begin_chat_turn(uuid, text, integer[], integer[], integer, integer, text, integer) to service_role;
