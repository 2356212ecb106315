-- A chat turn's settlement and its end in one round trip: finalize_chat_turn (the reservation settled,
-- the usage row written) and end_conversation_turn (the last text, the status, the terminal event a
-- replay ends with), whose terminal and usage take the settlement's figures from the same statement.
-- A settlement that fails (a reservation the expiry refunded) writes neither: the service then settles
-- and ends the turn apart, as before.

-- why: the settlement of finalize_chat_turn, then the turn's end with it. p_terminal is the done event
-- without its usage, which the settlement gives (and its timings' finalize: the settlement's time in the
-- database); the conversation's lesson follows p_document (the answer's first source) only when the turn
-- is charged, as the service decides it. Returns the settlement and the terminal as written.
create or replace function public.finalize_recorded_chat_turn(p_reservation uuid, p_actual integer, p_request_id text, p_kind text,
                                                              p_cap_multiplier numeric, p_characters integer, p_model text,
                                                              p_details jsonb, p_turn uuid, p_status text, p_text text,
                                                              p_sources_event jsonb, p_terminal jsonb, p_document uuid)
returns table (reservation_id uuid, user_id uuid, status text, estimated integer, actual integer, charged integer,
               refunded integer, uncovered integer, token_balance bigint, ledger_entry_id bigint, request_id text,
               terminal jsonb)
language plpgsql security definer set search_path = '' as $$
declare
  started timestamptz := clock_timestamp();
  r record;
  usage jsonb;
begin
  select * into r from private.settle_reservation(p_reservation, p_actual, p_request_id, p_kind, p_cap_multiplier, p_characters,
                                                  p_model, p_details);
  usage := jsonb_build_object('estimated', r.estimated, 'actual', r.actual, 'charged', r.charged, 'refunded', r.refunded,
                              'uncovered', r.uncovered, 'characters', p_characters, 'token_balance', r.token_balance);
  terminal := jsonb_set(p_terminal, '{data,usage}', usage);
  if jsonb_typeof(terminal -> 'data' -> 'timings') = 'object' then
    terminal := jsonb_set(terminal, '{data,timings,finalize}',
                          to_jsonb(round((extract(epoch from clock_timestamp() - started) * 1000)::numeric, 2)));
  end if;
  perform public.end_conversation_turn(p_turn, p_status, p_text, p_sources_event, terminal, usage,
                                       case when r.charged > 0 then p_document end);
  reservation_id := r.reservation_id;
  user_id := r.user_id;
  status := r.status;
  estimated := r.estimated;
  actual := r.actual;
  charged := r.charged;
  refunded := r.refunded;
  uncovered := r.uncovered;
  token_balance := r.token_balance;
  ledger_entry_id := r.ledger_entry_id;
  request_id := r.request_id;
  return next;
end;
$$;
