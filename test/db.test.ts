import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createTestDatabase, type TestDatabase } from './helpers/db.ts'
import { asService, asUser, isPgError } from '../functions-shared/db/tx.ts'
import { loadMigrations, migrateRepository } from '../scripts/lib/migrations.ts'
import { migrate, parseMigrationFile, SQUASHED_CHAIN } from '../functions-shared/db/migrate.ts'

let db: TestDatabase
const amina = crypto.randomUUID()
const moussa = crypto.randomUUID()

beforeAll(async () => {
  db = await createTestDatabase()
  // A user-owned table guarded the way the migrations guard theirs.
  await db.sql.unsafe(`
    create table public.notes (id serial primary key, user_id uuid not null, body text not null);
    alter table public.notes enable row level security;
    create policy "Users read their own notes" on public.notes for select to authenticated using ((select auth.uid()) = user_id);
    insert into public.notes (user_id, body) values ('${amina}', 'note of amina'), ('${moussa}', 'note of moussa');
  `)
})
afterAll(async () => db?.close())

describe('asUser', () => {
  it('sees only the rows the RLS policy grants to that user', async () => {
    const rows = await asUser(db.sql, { sub: amina, email: 'amina@example.mr' }, (tx) => tx`select body from public.notes order by id`)
    expect(rows.map((r) => r.body)).toEqual(['note of amina'])
  })

  it('runs as the authenticated role with the claims PostgREST would set', async () => {
    const [row] = await asUser(
      db.sql,
      { sub: moussa, app_metadata: { role: 'student' } },
      (tx) => tx`select current_user as who, auth.uid() as uid, auth.jwt() -> 'app_metadata' ->> 'role' as role, auth.role() as api_role`,
    )
    expect(row).toEqual({ who: 'authenticated', uid: moussa, role: 'student', api_role: 'authenticated' })
  })

  it('leaves nothing behind: the next query on the connection is the owner again', async () => {
    await asUser(db.sql, { sub: amina }, (tx) => tx`select 1`)
    const [row] = await db.sql`select current_user as who, nullif(current_setting('request.jwt.claims', true), '') as claims`
    expect(row!.who).not.toBe('authenticated')
    expect(row!.claims).toBeNull()
  })

  it('cannot write without a policy that allows it', async () => {
    const err = await asUser(db.sql, { sub: amina }, (tx) => tx`insert into public.notes (user_id, body) values (${amina}, 'x')`).catch((e: unknown) => e)
    expect(isPgError(err, '42501')).toBe(true)
  })
})

describe('asService', () => {
  it('runs as service_role, which bypasses RLS', async () => {
    const rows = await asService(db.sql, (tx) => tx`select current_user as who, count(*)::int as n from public.notes group by 1`)
    expect(rows[0]).toEqual({ who: 'service_role', n: 2 })
  })

  it('cannot read private tables that are not granted to it', async () => {
    const err = await asService(db.sql, (tx) => tx`select * from auth.refresh_tokens`).catch((e: unknown) => e)
    expect(isPgError(err, '42501')).toBe(true)
  })
})

describe('migration runner', () => {
  it('recorded every migration once, with version and name, as the Supabase CLI does', async () => {
    const { migrations } = await loadMigrations()
    const rows = await db.sql`select version, name from supabase_migrations.schema_migrations order by version`
    expect(rows.map((r) => `${r.version}_${r.name}`)).toEqual(migrations.map((m) => `${m.version}_${m.name}`))
  })

  it('applies nothing the second time and never re-applies the shim', async () => {
    expect(await migrateRepository(db.sql)).toEqual({ shimApplied: false, applied: [] })
  })

  it('gives a local database made before a shim addition what the addition holds, and leaves one that has it alone', async () => {
    await db.sql`drop table auth.mfa_amr_claims, auth.mfa_challenges, auth.mfa_factors`
    await db.sql`drop type auth.factor_type, auth.factor_status`
    expect(await migrateRepository(db.sql)).toEqual({ shimApplied: false, applied: [] })
    const [after] = await db.sql`select to_regclass('auth.mfa_factors') is not null as factors, to_regclass('auth.mfa_amr_claims') is not null as claims`
    expect(after).toEqual({ factors: true, claims: true })
    // a database with GoTrue's own migration table is Supabase's: no addition runs there
    await db.sql`create table auth.schema_migrations (version text)`
    await db.sql`drop table auth.mfa_amr_claims`
    await migrateRepository(db.sql)
    const [supabase] = await db.sql`select to_regclass('auth.mfa_amr_claims') is null as untouched`
    expect(supabase!.untouched).toBe(true)
    await db.sql`drop table auth.schema_migrations`
    await migrateRepository(db.sql)
  })

  it('rejects a file name that is not <version>_<name>.sql', () => {
    expect(() => parseMigrationFile('init.sql', '')).toThrow(/<version>_<name>\.sql/)
    expect(parseMigrationFile('20261101000100_foundation.sql', 'x')).toEqual({ version: '20261101000100', name: 'foundation', sql: 'x' })
  })

  it('records a database made by the chain the baseline replaced as the baseline, and refuses one it cannot continue', async () => {
    const loaded = await loadMigrations()
    const { migrations } = loaded
    const all = migrations.map((m) => `${m.version}_${m.name}`)
    const baseline = all.filter((m) => SQUASHED_CHAIN.baseline.includes(m.slice(0, 14)))
    const recorded = async () =>
      (await db.sql`select version, name from supabase_migrations.schema_migrations order by version`).map((r) => `${r.version}_${r.name}`)
    const recordChain = async (versions: string[]) => {
      await db.sql`delete from supabase_migrations.schema_migrations`
      for (const v of versions) await db.sql`insert into supabase_migrations.schema_migrations (version, name) values (${v}, 'former')`
    }
    // the whole former chain: the same database as the baseline's (scripts/schema-compare.sh), recorded as
    // it (the runner as it stood with the baseline alone; the migrations made since apply as to any database)
    await recordChain(SQUASHED_CHAIN.versions)
    expect(await migrate(db.sql, { ...loaded, migrations: migrations.filter((m) => SQUASHED_CHAIN.baseline.includes(m.version)) })).toEqual({
      shimApplied: false,
      applied: [],
      rerecorded: baseline,
    })
    expect(await recorded()).toEqual(baseline)
    // part of it (a data directory made by an older checkout), or a version from elsewhere: refused, nothing changed
    for (const versions of [SQUASHED_CHAIN.versions.slice(0, -1), [...migrations.map((m) => m.version), '20991231000100']]) {
      await recordChain(versions)
      await expect(migrateRepository(db.sql)).rejects.toThrow(
        /does not have \(\d{14}_former.*squashed into one baseline migration per concern.*mv \.data \.data\.old/,
      )
      expect(await recorded()).toEqual(versions.map((v) => `${v}_former`).sort())
    }
    // this database as it was: every migration applied
    await db.sql`delete from supabase_migrations.schema_migrations`
    for (const m of migrations) await db.sql`insert into supabase_migrations.schema_migrations (version, name) values (${m.version}, ${m.name})`
    expect(await migrateRepository(db.sql)).toEqual({ shimApplied: false, applied: [] })
    expect(await recorded()).toEqual(all)
  })

  it('created the Supabase platform objects: roles, auth tables, helpers, vector', async () => {
    const roles = await db
      .sql`select rolname from pg_roles where rolname in ('anon','authenticated','service_role','authenticator','supabase_auth_admin') order by 1`
    expect(roles.map((r) => r.rolname)).toEqual(['anon', 'authenticated', 'authenticator', 'service_role', 'supabase_auth_admin'])
    const tables = await db.sql`select table_name from information_schema.tables where table_schema = 'auth' order by 1`
    expect(tables.map((r) => r.table_name)).toEqual(['identities', 'mfa_amr_claims', 'mfa_challenges', 'mfa_factors', 'refresh_tokens', 'sessions', 'users'])
    const [ext] = await db.sql`select extnamespace::regnamespace::text as schema from pg_extension where extname = 'vector'`
    expect(ext!.schema).toBe('extensions')
    const [v] = await db.sql`select '[1,2,2]'::extensions.vector operator(extensions.<=>) '[1,2,2]'::extensions.vector as d`
    expect(v!.d).toBe(0)
  })
})

describe('test users', () => {
  it('are auth.users rows with a token whose sub is their id', async () => {
    const { createUser } = await import('./helpers/users.ts')
    const user = await createUser(db.sql, { role: 'teacher' })
    const [row] = await db.sql`select email, raw_app_meta_data ->> 'role' as role from auth.users where id = ${user.id}`
    expect(row).toEqual({ email: user.email, role: 'teacher' })
    const [, payload] = user.token.split('.')
    expect(JSON.parse(Buffer.from(payload!, 'base64url').toString())).toMatchObject({ sub: user.id, app_metadata: { role: 'teacher' } })
  })
})
