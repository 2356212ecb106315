-- why: an access token outlives a demotion, a password reset and a sign-out by up to its lifetime (an
-- hour): an admin's token that still says "admin" after any of them must not keep admin rights. Both
-- the admin routes (http/guards.ts) and the policies (private.is_admin) read the role in profiles and
-- the session in auth.sessions, not the token's word for them. security definer: the service role and
-- the policies' callers cannot read auth.sessions themselves.
create function private.admin_session(p_user uuid, p_session text) returns boolean
language sql stable security definer set search_path = '' as $$
  select exists (select 1 from public.profiles p where p.id = p_user and p.role = 'admin')
     and (p_session is null or exists (select 1 from auth.sessions s where s.id::text = p_session and s.user_id = p_user))
$$;

revoke all on function private.admin_session(uuid, text) from public, anon, authenticated;
grant usage on schema private to service_role;
grant execute on function private.admin_session(uuid, text) to service_role;

-- the token's role, and the profile's role and the session now
create or replace function private.is_admin() returns boolean
language sql stable security definer set search_path = '' as $$
  select coalesce((select auth.jwt()) -> 'app_metadata' ->> 'role', '') = 'admin'
     and private.admin_session((select auth.uid()), nullif((select auth.jwt()) ->> 'session_id', ''))
$$;
