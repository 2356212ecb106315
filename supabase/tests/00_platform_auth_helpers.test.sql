-- The platform's auth helpers read the JWT claims that PostgREST (and asUser) put in request.jwt.claims.
begin;
create extension if not exists pgtap with schema extensions;
set local search_path = public, extensions;
select plan(9);

select is(auth.uid(), null, 'auth.uid() is null when no claims are set');
select is(auth.jwt(), null, 'auth.jwt() is null when no claims are set');

select set_config('request.jwt.claims', '{"sub":"7d3f1d6e-4b0a-4c59-9a8e-0c6a4f1b2e3d","role":"authenticated","email":"amina@example.mr","app_metadata":{"role":"student"}}', true);
select is(auth.uid(), '7d3f1d6e-4b0a-4c59-9a8e-0c6a4f1b2e3d'::uuid, 'auth.uid() reads sub from request.jwt.claims');
select is(auth.role(), 'authenticated', 'auth.role() reads role from request.jwt.claims');
select is(auth.email(), 'amina@example.mr', 'auth.email() reads email from request.jwt.claims');
select is(auth.jwt() -> 'app_metadata' ->> 'role', 'student', 'auth.jwt() returns the whole claims object');

select set_config('request.jwt.claim.sub', '11111111-2222-3333-4444-555555555555', true);
select is(auth.uid(), '11111111-2222-3333-4444-555555555555'::uuid, 'the legacy per-claim setting takes precedence, as on Supabase');

select ok((select rolbypassrls from pg_roles where rolname = 'service_role'), 'service_role bypasses row level security');
select ok(not (select rolbypassrls from pg_roles where rolname = 'authenticated'), 'authenticated does not bypass row level security');

select * from finish();
rollback;
