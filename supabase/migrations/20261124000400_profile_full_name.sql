-- A profile's full_name keeps in the database the bounds the API gives it (FullNameSchema: trimmed, at
-- most 200 characters). Until now only the API checked them: a student could write a name of a million
-- characters through /rest/v1 (authenticated may update that column of their own row), or through the
-- sign-up metadata, and the admin's user list grew by a megabyte.
-- - names already stored are trimmed and cut to 200 characters;
-- - the column has a CHECK: at most 200 characters, no white space at either end (empty stays allowed:
--   it is the default of an account signed up without a name);
-- - handle_new_user trims and cuts the sign-up metadata's name the same way.

update public.profiles
   set full_name = btrim(left(btrim(full_name, E' \t\n\r'), 200), E' \t\n\r')
 where full_name is distinct from btrim(left(btrim(full_name, E' \t\n\r'), 200), E' \t\n\r');

alter table public.profiles
  add constraint profiles_full_name_bounds check (char_length(full_name) <= 200 and full_name = btrim(full_name, E' \t\n\r'));

-- why: the profile is created with the account. The role is taken only from raw_app_meta_data, which
-- only the service role can write; whatever a self sign-up puts in its metadata, it gets 'student'. The
-- name from the metadata is trimmed and cut to the column's 200 characters.
create or replace function public.handle_new_user() returns trigger
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
revoke execute on function public.handle_new_user() from public, anon, authenticated;
