-- A user's read of profiles through the primary key. "Their own row, or every row for an admin" written
-- as an OR (id = uid or is_admin) cannot use an index: every read of profiles by any user without a
-- filter of its own (supabase-js's .from('profiles').select(), with or without Prefer: count=exact) read
-- and dropped every other account's profile, 7.5 ms at 100,000 accounts (13 ms with the count) on the
-- embedded database, whose one session serves every request.
-- The same rows, as a range of the key: from and to the caller's own id for a user, from the lowest to the
-- highest uuid for an admin. Each bound is one initPlan per statement (auth.uid() and private.is_admin()
-- each in a select of its own, as Supabase's advisor asks); a token without a subject has
-- null bounds and reads nothing, as before.
alter policy "Users read their own profile, admins every profile" on public.profiles
  using (
    id >= (select case when (select private.is_admin()) then '00000000-0000-0000-0000-000000000000'::uuid else (select auth.uid()) end)
    and id <= (select case when (select private.is_admin()) then 'ffffffff-ffff-ffff-ffff-ffffffffffff'::uuid else (select auth.uid()) end)
  );
