-- check_wallet (public.begin_chat_turn) counts the day's turns only for a tier with a daily limit; the
-- rest of the function is as the chat's baseline (20261101000700_chat.sql) defines it.
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
  -- the day's turns are counted only for a tier that has a daily limit: counting them grows with every
  -- turn of the day, and a tier without a limit has nothing to compare them with (turns is then null)
  if daily > 0 then
    turns := (select count(*) from public.usage_log u
               where u.user_id = p_user and u.kind in ('chat', 'clarify')
                 and u.created_at >= date_trunc('day', now() at time zone 'utc') at time zone 'utc')
           + (select count(*) from public.reservations r where r.user_id = p_user and r.status = 'reserved' and r.expires_at > now());
  end if;
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
