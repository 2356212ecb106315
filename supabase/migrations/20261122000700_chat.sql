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

-- why: check_wallet in one call, under the wallet's row lock: the tier, the hint level, the daily limit
-- (turns billed this UTC day plus turns in flight, so concurrent turns cannot pass it together) and the
-- reservation of the tier's estimate. Refusals are returned, not raised: 'daily_limit' or
-- 'insufficient_balance' (nothing reserved). Arrays are indexed by tier: free, standard, premium; a
-- daily limit of 0 is unlimited.
create function public.begin_chat_turn(p_user uuid, p_request_id text, p_estimates integer[], p_daily_limits integer[],
                                       p_ttl_seconds integer, p_bonus integer)
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
    perform private.ensure_wallet(p_user, p_bonus); -- the first turn creates the wallet (welcome bonus)
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

-- why: dense retrieval in one statement: the tier's K nearest chunks of an index under the filters
-- present (only those go into the query, planned for its values). With a namespace or one document the
-- candidate rows are few and found by their btree index, ranked exactly; so is a table smaller than
-- p_exact_below rows. Otherwise metadata filters go through the HNSW index (the planner, misjudging the
-- jsonb filters, would rank every row exactly), with pgvector's iterative scan so a selective filter
-- still fills K. The planner settings are restored before return. Of the metadata only what a source
-- cites is returned (the whole jsonb cost more than the search to send and parse).
create function public.match_chunks(p_index text, p_query extensions.vector, p_k integer, p_namespace text default null,
                                    p_grade text default null, p_subject text default null, p_language text default null,
                                    p_file uuid default null, p_exact_below integer default 10000,
                                    p_ef_search integer default 200)
returns table (id text, file_id uuid, namespace text, page_number integer, source_url text, ingestion_ts text, distance double precision)
language plpgsql set search_path = '' set hnsw.iterative_scan = 'relaxed_order' as $$
declare
  use_hnsw boolean := p_namespace is null and p_file is null
                      and coalesce(p_grade, p_subject, p_language) is not null
                      and (select c.reltuples from pg_catalog.pg_class c where c.oid = 'public.vectors'::regclass) >= p_exact_below;
  seqscan text := current_setting('enable_seqscan');
  sort text := current_setting('enable_sort');
begin
  perform set_config('hnsw.ef_search', least(1000, greatest(p_ef_search, p_k * 2))::text, true);
  if use_hnsw then
    perform set_config('enable_seqscan', 'off', true), set_config('enable_sort', 'off', true);
  end if;
  return query execute
    'select v.id, v.file_id, v.namespace, (v.metadata ->> ''page_number'')::integer, v.metadata ->> ''source_url'',
            v.metadata ->> ''ingestion_ts'', v.embedding operator(extensions.<=>) $2 as distance
       from public.vectors v where v.index_name = $1'
    || case when p_namespace is not null then ' and v.namespace = $4' else '' end
    || case when p_grade is not null then ' and lower(v.metadata ->> ''grade'') = lower($5)' else '' end
    || case when p_subject is not null then ' and v.metadata ->> ''subject'' = $6' else '' end
    || case when p_language is not null then ' and v.metadata ->> ''language'' = $7' else '' end
    || case when p_file is not null then ' and v.file_id = $8' else '' end
    || ' order by distance limit $3'
    using p_index, p_query, p_k, p_namespace, p_grade, p_subject, p_language, p_file;
  if use_hnsw then
    perform set_config('enable_seqscan', seqscan, true), set_config('enable_sort', sort, true);
  end if;
end;
$$;

revoke all on function public.begin_chat_turn(uuid, text, integer[], integer[], integer, integer),
  public.match_chunks(text, extensions.vector, integer, text, text, text, text, uuid, integer, integer) from public, anon, authenticated;
grant execute on function public.begin_chat_turn(uuid, text, integer[], integer[], integer, integer),
  public.match_chunks(text, extensions.vector, integer, text, text, text, text, uuid, integer, integer) to service_role;
