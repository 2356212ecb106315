-- A chat turn's reservation and its record begin in one round trip: check_wallet (public.begin_chat_turn)
-- and, when it holds the tokens, the conversation's turn (public.begin_conversation_turn), whose meta
-- takes what was held (the tier, the hint level, the reservation) from the same row. A refusal (the
-- daily limit, the balance) records nothing; a conversation that is gone refuses the whole statement,
-- so nothing is held for a turn that cannot be recorded.

-- why: begin_chat_turn, then begin_conversation_turn when the turn is held; conversation_id is null when it
-- is refused. p_meta is the turn's meta without what is held. The reservation's expiry is written as
-- the service writes it (ISO 8601 in UTC, milliseconds).
create or replace function public.begin_recorded_chat_turn(p_user uuid, p_request_id text, p_estimates integer[],
                                                           p_daily_limits integer[], p_ttl_seconds integer, p_bonus integer,
                                                           p_address text, p_address_cap integer, p_turn uuid, p_conversation uuid,
                                                           p_question text, p_title text, p_meta jsonb, p_lease_seconds integer,
                                                           p_grade text, p_subject text)
returns table (tier text, hint_level integer, turns integer, token_balance bigint, estimated integer,
               reservation_id uuid, expires_at timestamptz, refused text, conversation_id uuid)
language plpgsql security definer set search_path = '' as $$
declare
  b record;
begin
  select * into b from public.begin_chat_turn(p_user, p_request_id, p_estimates, p_daily_limits, p_ttl_seconds, p_bonus,
                                              p_address, p_address_cap);
  tier := b.tier;
  hint_level := b.hint_level;
  turns := b.turns;
  token_balance := b.token_balance;
  estimated := b.estimated;
  reservation_id := b.reservation_id;
  expires_at := b.expires_at;
  refused := b.refused;
  if b.refused is null then
    conversation_id := public.begin_conversation_turn(
      p_turn, p_user, p_conversation, b.reservation_id, p_request_id, p_question, p_title,
      p_meta || jsonb_build_object(
        'tier', b.tier, 'hint_level', b.hint_level,
        'reservation', jsonb_build_object('id', b.reservation_id, 'estimated', b.estimated,
                                          'expires_at', to_char(b.expires_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'))),
      p_lease_seconds, p_grade, p_subject);
  end if;
  return next;
end;
$$;
