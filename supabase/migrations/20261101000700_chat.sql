-- The chat: a chat turn's wallet check and settlement, and the conversations a student keeps.

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

-- why: every chat turn settles its reservation in one call and leaves a usage record that explains the
-- charge (public.usage_log): finalize_reservation plus the turn's usage details, in one transaction and
-- one round trip.
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

-- why: a student's conversations are kept, and an answer survives its connection. Every chat turn
-- belongs to a conversation; its question and its answer are chat_messages, the answer written as it is
-- generated (in batches), so any process can read it, replay it and follow it to its end. A student reads
-- and deletes their own conversations (the messages go with them; ledger and usage rows stay: money
-- records are never deleted); nobody but the chat function's RPCs writes them.

create table public.conversations (
  id uuid primary key default gen_random_uuid(),
  user_id uuid not null references auth.users (id) on delete cascade,
  -- the first question, cut at a word near 80 characters
  title text not null check (char_length(title) between 1 and 200),
  -- the lesson the conversation is about: the last grade and subject a turn of it answered from
  grade text,
  subject text,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
create index conversations_user_updated_idx on public.conversations (user_id, updated_at desc);

create table public.chat_messages (
  id uuid primary key default gen_random_uuid(),
  conversation_id uuid not null references public.conversations (id) on delete cascade,
  turn_id uuid not null,
  role text not null check (role in ('student', 'teacher')),
  -- as written: the question as sent, the answer as generated
  content text not null default '',
  -- the teacher's cited snippets (the SSE sources event's list), [] until its first text
  sources jsonb not null default '[]'::jsonb,
  -- a student's message is 'sent'; a teacher's follows its turn
  status text not null check (status in ('sent', 'streaming', 'answered', 'clarified', 'cancelled', 'failed', 'interrupted')),
  created_at timestamptz not null default clock_timestamp(),
  unique (turn_id, role)
);
create index chat_messages_conversation_idx on public.chat_messages (conversation_id, created_at);

-- The state of a turn that the SSE replay and the cancel need, beside its messages: the events that are
-- not text (meta, sources, the terminal done or error), the lease of the process that generates it, and
-- a cancel asked for by any process. Read and written by the chat function only.
create table public.chat_turns (
  id uuid primary key,
  user_id uuid not null references auth.users (id) on delete cascade,
  conversation_id uuid references public.conversations (id) on delete set null,
  reservation_id uuid,
  request_id text not null,
  status text not null check (status in ('streaming', 'answered', 'clarified', 'cancelled', 'failed', 'interrupted')),
  meta jsonb not null,
  sources_event jsonb,
  terminal jsonb,
  usage jsonb,
  cancel_requested boolean not null default false,
  -- a streaming turn whose lease ran out lost its process (kill -9, a crash): it is interrupted
  lease_until timestamptz not null,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
create index chat_turns_user_idx on public.chat_turns (user_id, created_at desc);
create index chat_turns_conversation_idx on public.chat_turns (conversation_id);
create index chat_turns_streaming_idx on public.chat_turns (lease_until) where status = 'streaming';

-- Idempotency-Key of POST /chat: per user, for 24 hours, bound to the request's hash and its turn.
create table public.chat_idempotency_keys (
  user_id uuid not null references auth.users (id) on delete cascade,
  key text not null check (char_length(key) between 1 and 255),
  request_hash text not null,
  turn_id uuid not null,
  created_at timestamptz not null default now(),
  primary key (user_id, key)
);

alter table public.conversations enable row level security;
alter table public.chat_messages enable row level security;
alter table public.chat_turns enable row level security;
alter table public.chat_idempotency_keys enable row level security;

revoke all on public.conversations, public.chat_messages, public.chat_turns, public.chat_idempotency_keys from anon, authenticated;
grant select, delete on public.conversations to authenticated;
grant select on public.chat_messages to authenticated;
grant select, insert, update, delete on public.conversations, public.chat_messages, public.chat_turns, public.chat_idempotency_keys to service_role;
create policy "Students read their own conversations" on public.conversations for select to authenticated
  using ((select auth.uid()) = user_id);
create policy "Students delete their own conversations" on public.conversations for delete to authenticated
  using ((select auth.uid()) = user_id);
create policy "Students read the messages of their own conversations" on public.chat_messages for select to authenticated
  using (exists (select 1 from public.conversations c where c.id = conversation_id and c.user_id = (select auth.uid())));

-- why: a turn begins once its reservation is held, in one round trip: the conversation (made from the
-- question when none is given; refused with PT404 when it is not the user's) and its lesson (the grade
-- and subject the turn was asked or inferred with), the question and the empty answer as messages, and
-- the turn's state under a lease.
create function public.begin_conversation_turn(p_turn uuid, p_user uuid, p_conversation uuid, p_reservation uuid,
                                               p_request_id text, p_question text, p_title text, p_meta jsonb,
                                               p_lease_seconds integer, p_grade text default null, p_subject text default null)
returns uuid
language plpgsql security definer set search_path = '' as $$
declare
  conv uuid := p_conversation;
  v_at timestamptz := clock_timestamp();
begin
  if conv is null then
    insert into public.conversations (user_id, title, grade, subject) values (p_user, p_title, p_grade, p_subject) returning id into conv;
  else
    update public.conversations c set updated_at = now(), grade = coalesce(p_grade, c.grade), subject = coalesce(p_subject, c.subject)
     where c.id = conv and c.user_id = p_user;
    if not found then
      raise exception 'conversation % not found', conv using errcode = 'PT404';
    end if;
  end if;
  insert into public.chat_messages (conversation_id, turn_id, role, content, status, created_at)
  values (conv, p_turn, 'student', p_question, 'sent', v_at),
         (conv, p_turn, 'teacher', '', 'streaming', v_at + interval '1 microsecond');
  insert into public.chat_turns (id, user_id, conversation_id, reservation_id, request_id, status, meta, lease_until)
  values (p_turn, p_user, conv, p_reservation, p_request_id, 'streaming',
          p_meta || jsonb_build_object('conversation_id', conv), now() + make_interval(secs => p_lease_seconds));
  return conv;
end;
$$;

-- why: the answer written as it is generated: the text since the last write appended, the sources event
-- stored with the first text, the lease renewed. Returns whether a cancel was asked for (by any process),
-- and false for a turn that is no longer streaming (its conversation deleted, or interrupted).
create function public.append_turn_text(p_turn uuid, p_text text, p_sources_event jsonb, p_lease_seconds integer)
returns boolean
language plpgsql security definer set search_path = '' as $$
declare
  cancel boolean;
begin
  update public.chat_turns t
     set lease_until = now() + make_interval(secs => p_lease_seconds), updated_at = now(),
         sources_event = coalesce(t.sources_event, p_sources_event)
   where t.id = p_turn and t.status = 'streaming'
  returning t.cancel_requested into cancel;
  if not found then
    return false;
  end if;
  if p_text <> '' or p_sources_event is not null then
    update public.chat_messages m
       set content = m.content || p_text,
           sources = case when p_sources_event is null then m.sources else coalesce(p_sources_event -> 'sources', '[]'::jsonb) end
     where m.turn_id = p_turn and m.role = 'teacher';
  end if;
  return cancel;
end;
$$;

-- why: the turn's end, in one round trip: the last text, its status on the answer and the turn, the
-- terminal event a replay ends with, and the conversation's lesson for the follow-ups that name none:
-- the grade and subject of the document its answer cited first (p_document), when they are not those
-- the turn began with.
create function public.end_conversation_turn(p_turn uuid, p_status text, p_text text, p_sources_event jsonb,
                                             p_terminal jsonb, p_usage jsonb, p_document uuid default null)
returns void
language plpgsql security definer set search_path = '' as $$
declare
  conv uuid;
begin
  update public.chat_turns t
     set status = p_status, terminal = p_terminal, usage = p_usage, updated_at = now(),
         sources_event = coalesce(t.sources_event, p_sources_event)
   where t.id = p_turn and t.status = 'streaming'
  returning t.conversation_id into conv;
  if not found then
    return;
  end if;
  update public.chat_messages m
     set content = m.content || p_text, status = p_status,
         sources = case when p_sources_event is null then m.sources else coalesce(p_sources_event -> 'sources', '[]'::jsonb) end
   where m.turn_id = p_turn and m.role = 'teacher';
  if p_document is not null then
    update public.conversations c set grade = d.grade, subject = d.subject
      from public.documents d
     where c.id = conv and d.id = p_document and d.subject is not null
       and (c.grade is distinct from d.grade or c.subject is distinct from d.subject);
  end if;
end;
$$;

-- why: POST /chat/turns/{id}/cancel from any process: the generating process reads the flag at its next
-- write (or its lease renewal) and stops. Returns the turn's status, null when it is not the user's.
create function public.request_turn_cancel(p_turn uuid, p_user uuid) returns text
language plpgsql security definer set search_path = '' as $$
declare
  st text;
begin
  update public.chat_turns t set cancel_requested = true, updated_at = now()
   where t.id = p_turn and t.user_id = p_user and t.status = 'streaming'
  returning t.status into st;
  if found then
    return st;
  end if;
  select t.status into st from public.chat_turns t where t.id = p_turn and t.user_id = p_user;
  return st;
end;
$$;

-- why: a turn whose process died (kill -9, a crash, a lost instance) stays 'streaming' with a lease that
-- nobody renews: past it, the turn is 'interrupted', its text kept readable, and its hold released (the
-- student pays nothing for the service's failure). Run at start, by the expiry interval, and before a
-- turn is read. p_turn limits it to one turn.
create function public.interrupt_stale_turns(p_turn uuid default null, p_now timestamptz default now())
returns integer
language plpgsql security definer set search_path = '' as $$
declare
  t public.chat_turns;
  n integer := 0;
  v_terminal jsonb;
begin
  for t in
    select * from public.chat_turns ct
     where ct.status = 'streaming' and ct.lease_until < p_now and (p_turn is null or ct.id = p_turn)
     for update skip locked
  loop
    v_terminal := jsonb_build_object('event', 'error', 'data', jsonb_build_object(
      'error', 'service_unavailable', 'request_id', t.request_id, 'status', 'interrupted',
      'message', 'The answer was interrupted by a failure of the service; what was written is kept, and nothing was charged'));
    update public.chat_turns ct set status = 'interrupted', terminal = v_terminal, updated_at = now()
     where ct.id = t.id;
    update public.chat_messages m set status = 'interrupted' where m.turn_id = t.id and m.role = 'teacher';
    if t.reservation_id is not null
       and exists (select 1 from public.reservations r where r.id = t.reservation_id and r.status = 'reserved' and r.expires_at > now()) then
      perform public.finalize_reservation(t.reservation_id, 0, t.request_id, 'released', 2);
      update public.usage_log u set details = jsonb_build_object('outcome', 'interrupted') where u.reservation_id = t.reservation_id;
    end if;
    n := n + 1;
  end loop;
  return n;
end;
$$;

-- why: Idempotency-Key: the key's turn, claimed at once. A key unused or older than 24 hours is bound to
-- p_turn (fresh); so is a key whose turn never began, claimed more than p_takeover_seconds ago (its
-- request's process died while it decided the turn: nothing was reserved, or the reservation expires).
-- Otherwise the turn it is bound to comes back with the hash it was sent with.
create function public.claim_chat_idempotency(p_user uuid, p_key text, p_hash text, p_turn uuid,
                                              p_takeover_seconds integer default 120)
returns table (turn_id uuid, request_hash text, fresh boolean)
language plpgsql security definer set search_path = '' as $$
begin
  -- the user's keys past their 24 hours are forgotten as they come (the table holds a day of keys)
  delete from public.chat_idempotency_keys k where k.user_id = p_user and k.key <> p_key and k.created_at < now() - interval '24 hours';
  return query
    insert into public.chat_idempotency_keys as k (user_id, key, request_hash, turn_id)
    values (p_user, p_key, p_hash, p_turn)
    on conflict (user_id, key) do update set request_hash = excluded.request_hash, turn_id = excluded.turn_id, created_at = now()
      where k.created_at < now() - interval '24 hours'
         or (k.created_at < now() - make_interval(secs => p_takeover_seconds)
             and not exists (select 1 from public.chat_turns t where t.id = k.turn_id))
    returning k.turn_id, k.request_hash, true;
  if not found then
    return query select k.turn_id, k.request_hash, false from public.chat_idempotency_keys k where k.user_id = p_user and k.key = p_key;
  end if;
end;
$$;

-- why: a turn refused before it began (402, 429, 404, 503: nothing reserved) frees its key, so that the
-- retry after a top-up is a new turn rather than the refusal again.
create function public.release_chat_idempotency(p_user uuid, p_turn uuid) returns void
language sql security definer set search_path = '' as $$
  delete from public.chat_idempotency_keys k where k.user_id = p_user and k.turn_id = p_turn
$$;

-- The turns that lost their process are interrupted every minute where pg_cron is installed
-- (20261101000100_foundation.sql), as reservations are expired; elsewhere the server does it on its
-- expiry interval and at start, and a read of a turn interrupts that turn first.
do $$
begin
  if exists (select 1 from pg_extension where extname = 'pg_cron') then
    begin
      perform cron.schedule('interrupt-stale-turns', '* * * * *', 'select public.interrupt_stale_turns()');
    exception when others then
      raise notice 'pg_cron is not usable in this database (%); the server interrupts stale turns on an interval', sqlerrm;
    end;
  end if;
end
$$;
