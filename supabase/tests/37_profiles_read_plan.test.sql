-- Profiles: a user's read of profiles reads their own row through the primary key, whatever the number of
-- accounts. The policy's "own row or an admin" as an OR was not indexable: every read of profiles by any
-- student (supabase-js's .from('profiles').select() without a filter) scanned every profile, 7.5 ms at
-- 100,000 accounts on the embedded database, which serves every other request on the same thread.
begin;
create extension if not exists pgtap with schema extensions;
set local search_path = public, extensions;
select plan(6);

insert into auth.users (id, email, raw_app_meta_data, raw_user_meta_data, created_at, updated_at)
select gen_random_uuid(), 'many' || g || '@example.mr', '{"provider":"email","providers":["email"]}', '{}', now(), now()
  from generate_series(1, 3000) g;
insert into auth.users (id, email, raw_app_meta_data, raw_user_meta_data, created_at, updated_at) values
  ('a0000000-0000-4000-8000-000000000001', 'amina@example.mr', '{"provider":"email","providers":["email"]}', '{}', now(), now()),
  ('c0000000-0000-4000-8000-000000000003', 'admin@example.mr', '{"provider":"email","providers":["email"],"role":"admin"}', '{}', now(), now());
analyze public.profiles;

-- the plan of a statement as the role and claims in force, with the rows each node read and dropped
create function pg_temp.plan_of(q text) returns setof text language plpgsql as $$
declare line text;
begin
  for line in execute 'explain (analyze, costs off, timing off, summary off) ' || q loop
    return next line;
  end loop;
end $$;
grant execute on function pg_temp.plan_of(text) to authenticated;

-- Amina, a student
select set_config('role', 'authenticated', true);
select set_config('request.jwt.claims', '{"sub":"a0000000-0000-4000-8000-000000000001","role":"authenticated","app_metadata":{"role":"student"}}', true);
select results_eq($$ select id::text from profiles $$, $$ values ('a0000000-0000-4000-8000-000000000001') $$,
  'a student reads only their own profile among 3,002');
select is((select count(*)::int from pg_temp.plan_of('select * from public.profiles') l where l ~ 'Rows Removed by Filter|Seq Scan'), 0,
  'a student''s read of profiles goes through the primary key: no profile of another account is read and dropped');
select is((select count(*)::int from pg_temp.plan_of('select count(*) from public.profiles') l where l ~ 'Rows Removed by Filter|Seq Scan'), 0,
  'so does a count of them (Prefer: count=exact)');

-- a token without a subject reads nothing
select set_config('request.jwt.claims', '{"role":"authenticated","app_metadata":{"role":"student"}}', true);
select is((select count(*)::int from profiles), 0, 'a token without a subject reads no profile');

-- an admin (the role in profiles, as private.is_admin reads it) reads every profile
select set_config('request.jwt.claims', '{"sub":"c0000000-0000-4000-8000-000000000003","role":"authenticated","app_metadata":{"role":"admin"}}', true);
select set_config('role', 'none', true);
update profiles set role = 'admin' where id = 'c0000000-0000-4000-8000-000000000003';
select set_config('role', 'authenticated', true);
select is((select count(*)::int from profiles), 3002, 'an admin reads every profile');
select is((select count(*)::int from profiles where id = 'a0000000-0000-4000-8000-000000000001'), 1, 'and any one of them');

select * from finish();
rollback;
