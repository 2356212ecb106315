-- A profile's full_name keeps its bounds in the database (20261101000200_identity.sql): at most 200
-- characters and trimmed, whoever writes it; a sign-up's metadata name is trimmed and cut to them.
begin;
create extension if not exists pgtap with schema extensions;
set local search_path = public, extensions;
select plan(6);

insert into auth.users (id, email, raw_app_meta_data, raw_user_meta_data, created_at, updated_at) values
  ('e0000000-0000-4000-8000-000000000001', 'long@example.mr', '{"provider":"email"}', jsonb_build_object('full_name', '  ' || repeat('ب', 500) || '  '), now(), now()),
  ('e0000000-0000-4000-8000-000000000002', 'none@example.mr', '{"provider":"email"}', '{}', now(), now());

select is((select full_name from profiles where id = 'e0000000-0000-4000-8000-000000000001'), repeat('ب', 200),
  'a sign-up''s name of 500 characters is trimmed and cut to 200');
select is((select full_name from profiles where id = 'e0000000-0000-4000-8000-000000000002'), '',
  'a sign-up without a name has the empty name');

select set_config('role', 'authenticated', true);
select set_config('request.jwt.claims', '{"sub":"e0000000-0000-4000-8000-000000000001","role":"authenticated","app_metadata":{"role":"student"}}', true);
select throws_ok($$ update profiles set full_name = repeat('x', 201) where id = 'e0000000-0000-4000-8000-000000000001' $$, '23514', null,
  'a student cannot write a name of 201 characters');
select throws_ok($$ update profiles set full_name = ' Amina' where id = 'e0000000-0000-4000-8000-000000000001' $$, '23514', null,
  'nor one with white space at an end');
select lives_ok($$ update profiles set full_name = repeat('x', 200) where id = 'e0000000-0000-4000-8000-000000000001' $$,
  'a name of 200 characters is written');
reset role;
select throws_ok($$ update profiles set full_name = repeat('x', 201) where id = 'e0000000-0000-4000-8000-000000000002' $$, '23514', null,
  'so is the table''s owner: a CHECK binds every writer');

select * from finish();
rollback;
