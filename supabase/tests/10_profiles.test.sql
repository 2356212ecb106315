-- Profiles: the trigger, the RLS policies, the column grants and the access-token hook.
begin;
create extension if not exists pgtap with schema extensions;
set local search_path = public, extensions;
select plan(20);

-- Accounts as Supabase Auth writes them: a self sign-up (role only in user_metadata), an admin-created
-- teacher (role in app_metadata), and an admin.
insert into auth.users (id, email, raw_app_meta_data, raw_user_meta_data, created_at, updated_at) values
  ('a0000000-0000-4000-8000-000000000001', 'amina@example.mr', '{"provider":"email","providers":["email"]}', '{"full_name":"Amina Mint Ahmed","role":"admin"}', now(), now()),
  ('b0000000-0000-4000-8000-000000000002', 'moussa@example.mr', '{"provider":"email","providers":["email"],"role":"teacher"}', '{"full_name":"Moussa Ould Sidi"}', now(), now()),
  ('c0000000-0000-4000-8000-000000000003', 'admin@example.mr', '{"provider":"email","providers":["email"],"role":"admin"}', '{}', now(), now());

select is((select role from profiles where id = 'a0000000-0000-4000-8000-000000000001'), 'student',
  'a self sign-up that asks for admin in its metadata gets student');
select is((select full_name from profiles where id = 'a0000000-0000-4000-8000-000000000001'), 'Amina Mint Ahmed',
  'the profile takes full_name from the sign-up metadata');
select is((select role from profiles where id = 'b0000000-0000-4000-8000-000000000002'), 'teacher',
  'a role in app_metadata (written only by the service role) is trusted');
select is((select hint_level from profiles where id = 'b0000000-0000-4000-8000-000000000002'), 3::smallint,
  'the hint level starts at 3');

update auth.users set raw_app_meta_data = raw_app_meta_data || '{"role":"teacher"}' where id = 'a0000000-0000-4000-8000-000000000001';
select is((select role from profiles where id = 'a0000000-0000-4000-8000-000000000001'), 'teacher',
  'a role written to app_metadata later (as Supabase Auth does after the insert) reaches the profile');
update auth.users set email = 'amina.ahmed@example.mr' where id = 'a0000000-0000-4000-8000-000000000001';
select is((select email from profiles where id = 'a0000000-0000-4000-8000-000000000001'), 'amina.ahmed@example.mr',
  'an email change reaches the profile');
update auth.users set raw_app_meta_data = raw_app_meta_data || '{"role":"student"}' where id = 'a0000000-0000-4000-8000-000000000001';

-- Amina, signed in as a student
select set_config('role', 'authenticated', true);
select set_config('request.jwt.claims', '{"sub":"a0000000-0000-4000-8000-000000000001","role":"authenticated","app_metadata":{"role":"student"}}', true);

select results_eq($$ select id::text from profiles $$, $$ values ('a0000000-0000-4000-8000-000000000001') $$,
  'a student sees only their own profile');
select is_empty($$ select * from profiles where id = 'b0000000-0000-4000-8000-000000000002' $$,
  'another user''s profile is invisible');
select lives_ok($$ update profiles set full_name = 'Amina M. Ahmed' where id = 'a0000000-0000-4000-8000-000000000001' $$,
  'a user may change their own full_name');
select throws_ok($$ update profiles set role = 'admin' where id = 'a0000000-0000-4000-8000-000000000001' $$, '42501', null,
  'a student cannot change their role');
select throws_ok($$ update profiles set hint_level = 5 where id = 'a0000000-0000-4000-8000-000000000001' $$, '42501', null,
  'a student cannot change their hint level');
select is_empty($$ update profiles set full_name = 'hijacked' where id = 'b0000000-0000-4000-8000-000000000002' returning id $$,
  'a user cannot change another user''s profile');
select throws_ok($$ insert into profiles (id, email) values ('d0000000-0000-4000-8000-000000000004', 'x@example.mr') $$, '42501', null,
  'a user cannot create profiles');
select throws_ok($$ delete from profiles where id = 'a0000000-0000-4000-8000-000000000001' $$, '42501', null,
  'a user cannot delete profiles');
select throws_ok($$ select public.custom_access_token_hook('{}'::jsonb) $$, '42501', null,
  'users cannot call the access-token hook');

-- user_metadata is writable by its user, so it never grants the admin policy
select set_config('request.jwt.claims', '{"sub":"a0000000-0000-4000-8000-000000000001","role":"authenticated","app_metadata":{},"user_metadata":{"role":"admin"}}', true);
select is((select count(*)::int from profiles), 1, 'user_metadata.role = admin does not open other profiles');

-- an admin, by the app_metadata claim the hook sets
select set_config('request.jwt.claims', '{"sub":"c0000000-0000-4000-8000-000000000003","role":"authenticated","app_metadata":{"role":"admin"}}', true);
select is((select count(*)::int from profiles), 3, 'an admin reads every profile');
select is_empty($$ update profiles set full_name = 'renamed by admin' where id = 'b0000000-0000-4000-8000-000000000002' returning id $$,
  'admins change other profiles through the service, not directly');

-- anonymous callers
select set_config('role', 'anon', true);
select set_config('request.jwt.claims', '', true);
select throws_ok($$ select * from profiles $$, '42501', null, 'anonymous callers cannot read profiles');

-- the hook, as Supabase Auth calls it (as supabase_auth_admin)
select set_config('role', 'supabase_auth_admin', true);
create temp table hook_output on commit drop as
select public.custom_access_token_hook(jsonb_build_object(
  'user_id', 'b0000000-0000-4000-8000-000000000002',
  'claims', jsonb_build_object('sub', 'b0000000-0000-4000-8000-000000000002', 'aud', 'authenticated', 'role', 'authenticated',
    'app_metadata', jsonb_build_object('provider', 'email'), 'user_metadata', jsonb_build_object('role', 'admin')),
  'authentication_method', 'password')) as event;
select set_config('role', 'none', true);
select is((select event -> 'claims' -> 'app_metadata' from hook_output), '{"provider":"email","role":"teacher"}'::jsonb,
  'the hook sets app_metadata.role from the profile and keeps the other claims');

select * from finish();
rollback;
