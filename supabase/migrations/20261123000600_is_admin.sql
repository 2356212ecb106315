-- One definition of "the caller is an admin" for the policies, in place of the JWT check each of them
-- wrote out: the access token's app_metadata.role (written by the access-token hook from profiles.role;
-- a user cannot set app_metadata). Policies call it as (select private.is_admin()), evaluated once per
-- statement (an initPlan), as Supabase advises for auth functions in policies.
create function private.is_admin() returns boolean
language sql stable set search_path = '' as $$
  select coalesce((select auth.jwt()) -> 'app_metadata' ->> 'role', '') = 'admin'
$$;

-- why: a policy's expression runs as the querying role, so authenticated needs the schema and this
-- function; schema private is not exposed by the API (config.toml [api] schemas), and nothing else in it
-- is executable by authenticated (pgTAP 05 holds the list)
revoke all on function private.is_admin() from public, anon;
grant usage on schema private to authenticated;
grant execute on function private.is_admin() to authenticated, service_role;

alter policy "Users read their own profile, admins every profile" on public.profiles
  using ((select auth.uid()) = id or (select private.is_admin()));
alter policy "Admins manage scrape runs" on public.scrape_runs
  using ((select private.is_admin())) with check ((select private.is_admin()));
alter policy "Admins manage references" on public.curriculum_references
  using ((select private.is_admin())) with check ((select private.is_admin()));
