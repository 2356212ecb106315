-- What a wallet cycle writes, less what its invariants do not need (bench:wallet prints the writes of one
-- cycle, table by table):
-- - a chat turn's usage row is written once, with its characters, model and details, instead of inserted
--   by the settlement and updated at once by finalize_chat_turn;
-- - reservations_due_idx goes: the reservations in flight are few (a student's turns of the last minutes),
--   and reservations_user_due_idx, over the same rows, serves the expiry's scan of them as well.

drop index if exists public.reservations_due_idx;

-- why: the settlement of finalize_reservation (see the wallet baseline), with the usage row's turn facts
-- written in the same insert. Only the wallet's RPCs call it.
create or replace function private.settle_reservation(p_reservation uuid, p_actual integer, p_request_id text, p_kind text,
                                           p_cap_multiplier numeric, p_characters integer, p_model text, p_details jsonb)
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
  insert into public.usage_log (request_id, user_id, reservation_id, kind, estimated, actual, charged, uncovered, characters, model, details)
  values (rid, res.user_id, res.id, p_kind, res.estimated, p_actual, charge, capped - charge, p_characters, p_model, coalesce(p_details, '{}'::jsonb));
  return query select res.id, res.user_id, 'finalized'::text, res.estimated, p_actual, charge,
    greatest(res.estimated - charge, 0), capped - charge, balance, entry, rid;
end;
$$;
revoke all on function private.settle_reservation(uuid, integer, text, text, numeric, integer, text, jsonb) from public, anon, authenticated, service_role;

create or replace function public.finalize_reservation(p_reservation uuid, p_actual integer, p_request_id text default null,
                                                       p_kind text default 'chat', p_cap_multiplier numeric default 2)
returns table (reservation_id uuid, user_id uuid, status text, estimated integer, actual integer, charged integer,
               refunded integer, uncovered integer, token_balance bigint, ledger_entry_id bigint, request_id text)
language sql security definer set search_path = '' as $$
  select * from private.settle_reservation(p_reservation, p_actual, p_request_id, p_kind, p_cap_multiplier, null, null, null)
$$;

create or replace function public.finalize_chat_turn(p_reservation uuid, p_actual integer, p_request_id text, p_kind text,
                                                     p_cap_multiplier numeric, p_characters integer, p_model text, p_details jsonb)
returns table (reservation_id uuid, user_id uuid, status text, estimated integer, actual integer, charged integer,
               refunded integer, uncovered integer, token_balance bigint, ledger_entry_id bigint, request_id text)
language sql security definer set search_path = '' as $$
  select * from private.settle_reservation(p_reservation, p_actual, p_request_id, p_kind, p_cap_multiplier, p_characters, p_model, p_details)
$$;
