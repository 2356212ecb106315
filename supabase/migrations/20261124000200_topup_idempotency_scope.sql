-- An Idempotency-Key belongs to the caller that sent it (the admin's user id, service_role or admin_key,
-- as created_by records it), as a payment API scopes keys by account: two admins who happen to choose the
-- same key (a date, a receipt number) make two top-ups, and one admin's key never replays or refuses
-- another's request.
alter table public.financial_transactions drop constraint financial_transactions_idempotency_key_key;
alter table public.financial_transactions
  add constraint financial_transactions_idempotency_key_key unique (created_by, idempotency_key);

-- why: an admin top-up: balance, ledger and a credit/topup transaction in one transaction. The same
-- caller's same idempotency key replays the first result; with a different request it is refused (PT422).
create or replace function public.top_up(p_user uuid, p_tokens integer, p_amount numeric, p_currency text, p_payment_method text,
                                         p_reference text, p_created_by text, p_idempotency_key text default null,
                                         p_request_hash text default null, p_bonus integer default 50)
returns table (transaction_id uuid, user_id uuid, tokens bigint, new_balance bigint, ledger_entry_id bigint, replayed boolean, created_at timestamptz)
language plpgsql security definer set search_path = '' as $$
declare
  prior public.financial_transactions;
  balance bigint;
  entry bigint;
  tx public.financial_transactions;
begin
  if p_tokens is null or p_tokens <= 0 then
    raise exception 'tokens must be positive' using errcode = 'PT400';
  end if;
  if p_idempotency_key is not null then
    perform pg_advisory_xact_lock(hashtextextended('top_up:' || p_created_by || ':' || p_idempotency_key, 0));
    select * into prior from public.financial_transactions f
     where f.created_by = p_created_by and f.idempotency_key = p_idempotency_key;
    if found then
      if prior.request_hash is distinct from p_request_hash then
        raise exception 'idempotency key % was used for a different request', p_idempotency_key using errcode = 'PT422';
      end if;
      return query select prior.id, prior.user_id, prior.tokens, l.balance_after, prior.ledger_entry_id, true, prior.created_at
        from public.token_ledger l where l.id = prior.ledger_entry_id;
      return;
    end if;
  end if;
  perform private.expire_due(p_user, now());
  perform private.ensure_wallet(p_user, p_bonus);
  update public.wallets w set token_balance = w.token_balance + p_tokens, updated_at = now()
   where w.user_id = p_user returning w.token_balance into balance;
  insert into public.token_ledger (user_id, delta, reason, balance_after) values (p_user, p_tokens, 'topup', balance)
  returning id into entry;
  insert into public.financial_transactions (direction, type, amount, currency, payment_method, tokens, user_id, reference,
                                             created_by, idempotency_key, request_hash, ledger_entry_id)
  values ('credit', 'topup', p_amount, p_currency, p_payment_method, p_tokens, p_user, p_reference,
          p_created_by, p_idempotency_key, p_request_hash, entry)
  returning * into tx;
  return query select tx.id, p_user, p_tokens::bigint, balance, entry, false, tx.created_at;
end;
$$;
