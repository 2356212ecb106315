-- The day's chat turns of a student, kept in a counter rather than counted: check_wallet
-- (public.begin_chat_turn) and the read before a question (public.turns_today) counted the day's
-- usage rows, a count that grew with every turn of the day. private.chat_days holds, per student and
-- UTC day, the billed turns (chat and clarify usage rows); a trigger on usage_log keeps it, so every
-- way a usage row is written counts (the settlement's RPCs, an operator's manual row of those kinds).
-- The days before today are kept (one row per student and day of use).

create table if not exists private.chat_days (
  user_id uuid not null,
  day date not null,
  turns integer not null check (turns >= 0),
  primary key (user_id, day)
);
revoke all on table private.chat_days from public, anon, authenticated;
grant select on table private.chat_days to service_role;

-- why: a billed turn counts for the UTC day its usage row was written on, as the count did
create or replace function private.count_chat_day() returns trigger
language plpgsql security definer set search_path = '' as $$
begin
  insert into private.chat_days as d (user_id, day, turns)
  values (new.user_id, (new.created_at at time zone 'utc')::date, 1)
  on conflict (user_id, day) do update set turns = d.turns + 1;
  return null;
end;
$$;

drop trigger if exists usage_log_chat_days on public.usage_log;
create trigger usage_log_chat_days after insert on public.usage_log
  for each row when (new.kind in ('chat', 'clarify')) execute function private.count_chat_day();

-- the days already written (the migration runs once; a day counted twice cannot happen: the table is new)
insert into private.chat_days (user_id, day, turns)
select u.user_id, (u.created_at at time zone 'utc')::date, count(*)
  from public.usage_log u
 where u.kind in ('chat', 'clarify')
 group by 1, 2
on conflict (user_id, day) do nothing;

-- why: the chat enforces the tier's daily limit: billed turns (chat and clarifying) of this UTC day
create or replace function public.turns_today(p_user uuid) returns integer
language sql stable security definer set search_path = '' as $$
  select coalesce((select d.turns from private.chat_days d where d.user_id = p_user and d.day = (now() at time zone 'utc')::date), 0)
$$;

-- check_wallet reads the counter; the rest of the function is as 20261128053442_chat_turn_daily_count.sql
-- defines it.
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
