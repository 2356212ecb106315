-- The catalogue stays closed: every table of public has row level security, every security-definer
-- function pins its search_path, the API roles can execute nothing outside an explicit allowlist, and a
-- function created now is closed until granted.
begin;
create extension if not exists pgtap with schema extensions;
set local search_path = public, extensions;
select plan(13);

select is(
  (select array_agg(c.relname::text order by c.relname) from pg_class c join pg_namespace n on n.oid = c.relnamespace
    where n.nspname = 'public' and c.relkind in ('r', 'p') and not c.relrowsecurity),
  null, 'every table in public has row level security');

select is(
  (select array_agg(n.nspname || '.' || p.proname order by 1) from pg_proc p join pg_namespace n on n.oid = p.pronamespace
    where p.prosecdef and n.nspname in ('public', 'private', 'auth')
      and not exists (select 1 from unnest(coalesce(p.proconfig, '{}')) s where s like 'search\_path=%')),
  null, 'every security-definer function pins its search_path');

-- the allowlist: what anon and authenticated may call (none today: every RPC is the service role's)
select is(
  (select array_agg(p.proname::text || ' (' || r.rolname || ')' order by 1) from pg_proc p join pg_namespace n on n.oid = p.pronamespace
    cross join (values ('anon'), ('authenticated')) r(rolname)
    where n.nspname = 'public' and has_function_privilege(r.rolname, p.oid, 'execute')
      and p.proname <> all (array[]::text[])
      -- an extension's own functions (pgTAP, where a server keeps it in public) are not ours
      and not exists (select 1 from pg_depend d where d.classid = 'pg_proc'::regclass and d.objid = p.oid and d.deptype = 'e')),
  null, 'anon and authenticated can execute nothing in public outside the allowlist');

-- schema private is reached by authenticated for one function, the policies' admin check
select is(
  (select array_agg(p.proname::text || ' (' || r.rolname || ')' order by 1) from pg_proc p join pg_namespace n on n.oid = p.pronamespace
    cross join (values ('anon'), ('authenticated')) r(rolname)
    where n.nspname = 'private' and has_schema_privilege(r.rolname, 'private', 'usage') and has_function_privilege(r.rolname, p.oid, 'execute')
      and p.prorettype <> 'trigger'::regtype),
  array['is_admin (authenticated)'], 'anon and authenticated can execute nothing in private but is_admin');
select is(
  (select count(*)::integer from pg_policies where schemaname = 'public'
     and (coalesce(qual, '') || coalesce(with_check, '')) like '%app_metadata%'),
  0, 'no policy writes the admin check out: they call private.is_admin()');
-- an admin, signed in (the profile takes its role from app_metadata)
insert into auth.users (id, aud, role, email, raw_app_meta_data, raw_user_meta_data, created_at, updated_at)
values ('00000000-0000-4000-8000-000000000001', 'authenticated', 'authenticated', 'chef@example.mr', '{"role": "admin"}', '{}', now(), now());
insert into auth.sessions (id, user_id, created_at, updated_at) values ('00000000-0000-4000-8000-0000000000a1', '00000000-0000-4000-8000-000000000001', now(), now());
set local role authenticated;
select set_config('request.jwt.claims', '{"sub": "00000000-0000-4000-8000-000000000001", "role": "authenticated", "session_id": "00000000-0000-4000-8000-0000000000a1", "app_metadata": {"role": "admin"}}', true);
select ok(private.is_admin(), 'an admin''s token is an admin''s');
select set_config('request.jwt.claims', '{"sub": "00000000-0000-4000-8000-000000000001", "role": "authenticated", "session_id": "00000000-0000-4000-8000-0000000000a1", "app_metadata": {"role": "student"}, "user_metadata": {"role": "admin"}}', true);
select ok(not private.is_admin(), 'a student''s is not, whatever user_metadata says');
select set_config('request.jwt.claims', '', true);
select ok(not private.is_admin(), 'no claims are no admin');
select set_config('request.jwt.claims', '{"sub": "00000000-0000-4000-8000-000000000001", "role": "authenticated", "session_id": "00000000-0000-4000-8000-0000000000b2", "app_metadata": {"role": "admin"}}', true);
select ok(not private.is_admin(), 'an admin''s token of a session that ended (sign-out, password reset) is no admin''s');
reset role;
update public.profiles set role = 'student' where id = '00000000-0000-4000-8000-000000000001';
set local role authenticated;
select set_config('request.jwt.claims', '{"sub": "00000000-0000-4000-8000-000000000001", "role": "authenticated", "session_id": "00000000-0000-4000-8000-0000000000a1", "app_metadata": {"role": "admin"}}', true);
select ok(not private.is_admin(), 'nor is the token of an admin demoted since it was issued');
reset role;

create function public.zz_forgotten_revoke() returns integer language sql security definer set search_path = '' as 'select 1';
select ok(not has_function_privilege('anon', 'public.zz_forgotten_revoke()', 'execute')
          and not has_function_privilege('authenticated', 'public.zz_forgotten_revoke()', 'execute'),
  'a new function in public is closed to anon and authenticated without a revoke');
select ok(has_function_privilege('service_role', 'public.zz_forgotten_revoke()', 'execute'), 'and open to the service role');
create function extensions.zz_extension_helper() returns integer language sql as 'select 1';
select ok(has_function_privilege('anon', 'extensions.zz_extension_helper()', 'execute'), 'a function of schema extensions stays callable by every role');

select * from finish();
rollback;
