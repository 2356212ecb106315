-- why: every chat turn settles its reservation in one call and leaves a usage record that explains the
-- charge: characters generated, the model, the path and the time each stage took.

-- A turn that fails before it answers (or whose client leaves before any text) is settled at 0 as
-- 'released': its row shows the attempt, and it does not count towards the daily limit.
alter table public.usage_log drop constraint usage_log_kind_check;
alter table public.usage_log add constraint usage_log_kind_check check (kind in ('chat', 'clarify', 'manual', 'released'));

alter table public.usage_log
  add column characters integer check (characters >= 0),
  add column model text,
  -- path, language, outcome, stage timings (ms), rerank mode, sources: what the turn did
  add column details jsonb not null default '{}'::jsonb;

create unique index usage_log_reservation_idx on public.usage_log (reservation_id);

-- why: finalize_reservation plus the turn's usage details, in one transaction and one round trip.
create function public.finalize_chat_turn(p_reservation uuid, p_actual integer, p_request_id text, p_kind text,
                                          p_cap_multiplier numeric, p_characters integer, p_model text, p_details jsonb)
returns table (reservation_id uuid, user_id uuid, status text, estimated integer, actual integer, charged integer,
               refunded integer, uncovered integer, token_balance bigint, ledger_entry_id bigint, request_id text)
language plpgsql security definer set search_path = '' as $$
begin
  return query select * from public.finalize_reservation(p_reservation, p_actual, p_request_id, p_kind, p_cap_multiplier);
  update public.usage_log u set characters = p_characters, model = p_model, details = coalesce(p_details, '{}'::jsonb)
   where u.reservation_id = p_reservation;
end;
$$;

revoke all on function public.finalize_chat_turn(uuid, integer, text, text, numeric, integer, text, jsonb) from public, anon, authenticated;
grant execute on function public.finalize_chat_turn(uuid, integer, text, text, numeric, integer, text, jsonb) to service_role;
