-- Identity: every account's profile, its role in the access token, and the admin check of the policies.

-- why: every account has a profile with its role and pedagogical hint level; the role drives the
-- access token (through the hook below) and the RLS policies of every other table.
create table public.profiles (
  id uuid primary key references auth.users (id) on delete cascade,
  email text,
  -- the bounds the API gives it (FullNameSchema: trimmed, at most 200 characters), kept by the database
  -- too: authenticated may update this column of their own row through /rest/v1, and sign-up metadata
  -- fills it; empty is the name of an account signed up without one
  full_name text not null default '',
  role text not null default 'student' check (role in ('admin', 'student', 'teacher')),
  -- how much the AI teacher scaffolds its answers: 1 (direct answers) to 5 (Socratic hints only)
  hint_level smallint not null default 3 check (hint_level between 1 and 5),
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  constraint profiles_full_name_bounds check (char_length(full_name) <= 200 and full_name = btrim(full_name, E' \t\n\r'))
);
create index profiles_role_idx on public.profiles (role);
create index profiles_created_at_idx on public.profiles (created_at desc, id);

alter table public.profiles enable row level security;

-- Closed by default: the default privileges granted everything to the API roles; take it back and grant
-- only what the policies below are for. A user may change their full_name and nothing else.
revoke all on public.profiles from anon, authenticated;
grant select on public.profiles to authenticated;
grant update (full_name) on public.profiles to authenticated;
grant all on public.profiles to service_role;

-- why: keep updated_at honest whoever writes the row.
create function public.touch_updated_at() returns trigger
language plpgsql set search_path = '' as $$
begin
  new.updated_at := now();
  return new;
end;
$$;

create trigger profiles_touch_updated_at before update on public.profiles
  for each row execute function public.touch_updated_at();

-- why: the profile is created with the account. The role is taken only from raw_app_meta_data, which
-- only the service role can write; whatever a self sign-up puts in its metadata, it gets 'student'. The
-- name from the metadata is trimmed and cut to the column's 200 characters.
create function public.handle_new_user() returns trigger
language plpgsql security definer set search_path = '' as $$
declare
  trusted_role text := new.raw_app_meta_data ->> 'role';
begin
  insert into public.profiles (id, email, full_name, role)
  values (
    new.id,
    new.email,
    coalesce(btrim(left(btrim(new.raw_user_meta_data ->> 'full_name', E' \t\n\r'), 200), E' \t\n\r'), ''),
    case when trusted_role in ('admin', 'student', 'teacher') then trusted_role else 'student' end
  );
  return new;
end;
$$;

create trigger on_auth_user_created after insert on auth.users
  for each row execute function public.handle_new_user();

-- why: Supabase Auth writes custom app_metadata in an UPDATE after the INSERT (admin createUser), and
-- admins change roles through app_metadata; the profile follows. Email changes follow too.
create function public.handle_user_updated() returns trigger
language plpgsql security definer set search_path = '' as $$
declare
  trusted_role text := new.raw_app_meta_data ->> 'role';
begin
  update public.profiles p
     set role = case
           when trusted_role in ('admin', 'student', 'teacher')
            and trusted_role is distinct from (old.raw_app_meta_data ->> 'role') then trusted_role
           else p.role
         end,
         email = new.email
   where p.id = new.id
     and (p.email is distinct from new.email
          or (trusted_role in ('admin', 'student', 'teacher') and trusted_role is distinct from (old.raw_app_meta_data ->> 'role')));
  return new;
end;
$$;

create trigger on_auth_user_updated after update of raw_app_meta_data, email on auth.users
  for each row execute function public.handle_user_updated();

-- why: puts the profile's role into the access token as app_metadata.role, so every service reads
-- the role from a claim users cannot write. Called by Supabase Auth (GoTrue) as supabase_auth_admin,
-- inside the token transaction; a role change takes effect at the user's next token.
create function public.custom_access_token_hook(event jsonb) returns jsonb
language plpgsql stable set search_path = '' as $$
declare
  claims jsonb := event -> 'claims';
  profile_role text;
begin
  select p.role into profile_role from public.profiles p where p.id = (event ->> 'user_id')::uuid;
  if profile_role is not null then
    if jsonb_typeof(claims -> 'app_metadata') is distinct from 'object' then
      claims := jsonb_set(claims, '{app_metadata}', '{}'::jsonb);
    end if;
    claims := jsonb_set(claims, '{app_metadata,role}', to_jsonb(profile_role));
  end if;
  return jsonb_set(event, '{claims}', claims);
end;
$$;

grant usage on schema public to supabase_auth_admin;
grant execute on function public.custom_access_token_hook(jsonb) to supabase_auth_admin;
grant select on public.profiles to supabase_auth_admin;
create policy "Auth admin reads roles for the access token" on public.profiles
  for select to supabase_auth_admin
  using (true);

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
grant execute on function private.admin_session(uuid, text) to service_role;

-- why: one definition of "the caller is an admin" for the policies: the access token's app_metadata.role
-- (written by the access-token hook from profiles.role; a user cannot set app_metadata), and the
-- profile's role and the session now (private.admin_session). Policies call it as
-- (select private.is_admin()), evaluated once per statement (an initPlan), as Supabase advises for auth
-- functions in policies.
create function private.is_admin() returns boolean
language sql stable security definer set search_path = '' as $$
  select coalesce((select auth.jwt()) -> 'app_metadata' ->> 'role', '') = 'admin'
     and private.admin_session((select auth.uid()), nullif((select auth.jwt()) ->> 'session_id', ''))
$$;

-- why: a policy's expression runs as the querying role, so authenticated needs the schema and this
-- function; schema private is not exposed by the API (config.toml [api] schemas), and nothing else in it
-- is executable by authenticated (pgTAP 05 holds the list)
grant usage on schema private to authenticated;
grant execute on function private.is_admin() to authenticated, service_role;

-- A user reads their own profile, an admin every profile; a user updates their own. The read is one
-- permissive policy (Supabase's advisor, multiple_permissive_policies: each permissive policy is
-- evaluated for every row read), written as a range of the primary key, so that a read without a filter
-- of its own (supabase-js's .from('profiles').select()) uses the index instead of reading and dropping
-- every other account's profile: from and to the caller's own id for a user, from the lowest to the
-- highest uuid for an admin. Each bound is one initPlan per statement; a token without a subject has
-- null bounds and reads nothing.
create policy "Users read their own profile, admins every profile" on public.profiles
  for select to authenticated
  using (
    id >= (select case when (select private.is_admin()) then '00000000-0000-0000-0000-000000000000'::uuid else (select auth.uid()) end)
    and id <= (select case when (select private.is_admin()) then 'ffffffff-ffff-ffff-ffff-ffffffffffff'::uuid else (select auth.uid()) end)
  );

create policy "Users update their own profile" on public.profiles
  for update to authenticated
  using ((select auth.uid()) = id)
  with check ((select auth.uid()) = id);
