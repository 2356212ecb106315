-- why: every account has a profile with its role and pedagogical hint level; the role drives the
-- access token (through the hook below) and the RLS policies of every other table.
create table public.profiles (
  id uuid primary key references auth.users (id) on delete cascade,
  email text,
  full_name text not null default '',
  role text not null default 'student' check (role in ('admin', 'student', 'teacher')),
  -- how much the AI teacher scaffolds its answers: 1 (direct answers) to 5 (Socratic hints only)
  hint_level smallint not null default 3 check (hint_level between 1 and 5),
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
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

create policy "Users read their own profile" on public.profiles
  for select to authenticated
  using ((select auth.uid()) = id);

create policy "Admins read every profile" on public.profiles
  for select to authenticated
  using (((select auth.jwt()) -> 'app_metadata' ->> 'role') = 'admin');

create policy "Users update their own profile" on public.profiles
  for update to authenticated
  using ((select auth.uid()) = id)
  with check ((select auth.uid()) = id);

-- why: keep updated_at honest whoever writes the row.
create function public.touch_updated_at() returns trigger
language plpgsql set search_path = '' as $$
begin
  new.updated_at := now();
  return new;
end;
$$;
revoke execute on function public.touch_updated_at() from public, anon, authenticated;

create trigger profiles_touch_updated_at before update on public.profiles
  for each row execute function public.touch_updated_at();

-- why: the profile is created with the account. The role is taken only from raw_app_meta_data, which
-- only the service role can write; whatever a self sign-up puts in its metadata, it gets 'student'.
create function public.handle_new_user() returns trigger
language plpgsql security definer set search_path = '' as $$
declare
  trusted_role text := new.raw_app_meta_data ->> 'role';
begin
  insert into public.profiles (id, email, full_name, role)
  values (
    new.id,
    new.email,
    coalesce(nullif(trim(new.raw_user_meta_data ->> 'full_name'), ''), ''),
    case when trusted_role in ('admin', 'student', 'teacher') then trusted_role else 'student' end
  );
  return new;
end;
$$;
revoke execute on function public.handle_new_user() from public, anon, authenticated;

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
revoke execute on function public.handle_user_updated() from public, anon, authenticated;

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
revoke execute on function public.custom_access_token_hook(jsonb) from authenticated, anon, public;
grant select on public.profiles to supabase_auth_admin;
create policy "Auth admin reads roles for the access token" on public.profiles
  for select to supabase_auth_admin
  using (true);
