-- The foundation: the extensions the service needs, closed-by-default EXECUTE, and the private schema
-- for backend-only state. The schema is one baseline migration per concern (foundation, identity,
-- wallet, catalogue, search, ingestion, chat), proven equal to the chain of migrations it replaced by
-- scripts/schema-compare.sh; a schema change is a new migration (`supabase migration new`).

-- On Supabase, extensions live in the `extensions` schema; objects here always name it explicitly.
create extension if not exists vector with schema extensions;
create extension if not exists pgcrypto with schema extensions;
-- the search form of a text removes Latin accents (20261101000500_search.sql)
create extension if not exists unaccent with schema extensions;

-- On Supabase, pg_cron runs the scheduled jobs (the wallet's expiry, the chat's stale turns) every
-- minute. Where the extension is not available (the local stack), or not usable in this database
-- (pg_cron lives in one database of a server, cron.database_name, and needs shared_preload_libraries),
-- the server runs them on an interval instead.
do $$
begin
  if exists (select 1 from pg_available_extensions where name = 'pg_cron') then
    begin
      create extension if not exists pg_cron with schema pg_catalog;
    exception when others then
      raise notice 'pg_cron is not usable in this database (%); the server runs the scheduled jobs on an interval', sqlerrm;
    end;
  end if;
end
$$;

-- Closed by default, enforced by the schema: a function created after these statements is executable by
-- its owner and, in public, the service role, and by no one else until its migration grants it, so a
-- forgotten revoke cannot expose a security-definer money RPC through /rest/v1/rpc (basejump's alter
-- default privileges). The extensions above are created before, with PostgreSQL's own defaults.
-- Two statements, because PostgreSQL grants EXECUTE to PUBLIC globally and a per-schema default cannot
-- take a global grant back; the per-schema one removes the platform's grants to the API roles (Supabase,
-- and the local shim, grant everything in public to anon, authenticated and service_role by default).
-- Applies to objects this role (the migrations' role) creates. Extensions live in schema extensions,
-- whose functions (pgvector's operators, pgTAP) every role calls: that schema keeps PUBLIC's EXECUTE by a
-- per-schema default. A function in private that a role must call is granted by its migration.
alter default privileges revoke execute on functions from public;
alter default privileges in schema public revoke execute on functions from anon, authenticated;
alter default privileges in schema extensions grant execute on functions to public;

-- why: backend-only helpers and state that must never be reachable through the Data API (config.toml
-- [api] schemas does not expose it).
create schema if not exists private;
revoke all on schema private from public, anon, authenticated;
grant usage on schema private to service_role;

-- why: sliding-window rate limits shared by several instances (RATE_LIMIT_STORE=postgres). One row per
-- limited key holds the hit times (ms since epoch) inside the window; a check is one upsert, and the row
-- lock taken by ON CONFLICT serializes concurrent checks of the same key.
create table private.rate_limits (
  key text primary key,
  hits bigint[] not null,
  allowed boolean not null,
  updated_at timestamptz not null default now()
);
create index rate_limits_updated_at_idx on private.rate_limits (updated_at);
alter table private.rate_limits enable row level security;
revoke all on private.rate_limits from public, anon, authenticated;
grant select, insert, update, delete on private.rate_limits to service_role;
