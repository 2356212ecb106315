-- Extensions the service needs, and the private schema for backend-only state.
-- On Supabase, extensions live in the `extensions` schema; objects here always name it explicitly.
create extension if not exists vector with schema extensions;
create extension if not exists pgcrypto with schema extensions;

-- why: backend-only helpers and state that must never be reachable through the Data API.
create schema if not exists private;
revoke all on schema private from public, anon, authenticated;
grant usage on schema private to service_role;

-- why: sliding-window rate limits shared by several instances (RATE_LIMIT_STORE=postgres). One row per
-- limited key holds the hit times (ms since epoch) inside the window; a check is one upsert, and the row
-- lock taken by ON CONFLICT serializes concurrent checks of the same key.
create table if not exists private.rate_limits (
  key text primary key,
  hits bigint[] not null,
  allowed boolean not null,
  updated_at timestamptz not null default now()
);
create index if not exists rate_limits_updated_at_idx on private.rate_limits (updated_at);
alter table private.rate_limits enable row level security;
revoke all on private.rate_limits from public, anon, authenticated;
grant select, insert, update, delete on private.rate_limits to service_role;
