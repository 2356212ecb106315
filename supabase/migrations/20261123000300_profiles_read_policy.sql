-- One permissive SELECT policy on profiles for authenticated, in place of two (Supabase's advisor,
-- multiple_permissive_policies: each permissive policy is evaluated for every row read). It lets the same
-- rows be read: a user's own profile, and every profile for an admin.
drop policy "Users read their own profile" on public.profiles;
drop policy "Admins read every profile" on public.profiles;

create policy "Users read their own profile, admins every profile" on public.profiles
  for select to authenticated
  using ((select auth.uid()) = id or ((select auth.jwt()) -> 'app_metadata' ->> 'role') = 'admin');
