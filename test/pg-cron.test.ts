// pg_cron on a real server: the wallet migration's `expire-reservations` job exists after
// `supabase db push`, and it is the scheduled job itself that refunds a stale reservation; so does the
// conversations migration's `interrupt-stale-turns`, which interrupts a turn whose lease ran out. It needs a
// PostgreSQL server with pg_cron preloaded and the migrations pushed into cron.database_name: CI gives
// it as CRON_DATABASE_URL (.ci/run, after the Supabase CLI's push); elsewhere this file does not run.
// pg_cron 1.4 (Debian bookworm) schedules by the minute, so the test waits for the next run (at most
// about 70 s).
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import postgres from 'postgres'

const url = process.env.CRON_DATABASE_URL

describe.runIf(url)('pg_cron on the server', () => {
  let sql: postgres.Sql
  beforeAll(() => {
    sql = postgres(url!, { max: 2, onnotice: () => {} })
  })
  afterAll(async () => sql?.end({ timeout: 5 }))

  it('has the expire-reservations job, every minute, and its run refunds a stale reservation; and the interrupt-stale-turns job', async () => {
    const [job] = await sql`select jobid, schedule, command, active from cron.job where jobname = 'expire-reservations'`
    expect(job).toMatchObject({ schedule: '* * * * *', command: 'select public.expire_reservations()', active: true })

    const user = crypto.randomUUID()
    await sql`insert into auth.users (id, aud, role, email, raw_app_meta_data, raw_user_meta_data, created_at, updated_at)
              values (${user}, 'authenticated', 'authenticated', ${`cron-${user.slice(0, 8)}@example.mr`}, '{"role": "student"}', '{}', now(), now())`
    const [wallet] = await sql`select token_balance::int as balance from public.get_or_create_wallet(${user})`
    const [reservation] = await sql`select id from public.reserve_tokens(${user}, 10)`
    const id = (reservation as { id: string }).id
    // stale: its time to live is over; nothing but the scheduled job touches it from here
    await sql`update public.reservations set expires_at = now() - interval '1 second' where id = ${id}`
    // and a chat turn whose process died: its lease is over (the conversations migration's job)
    const [turnJob] = await sql`select command from cron.job where jobname = 'interrupt-stale-turns'`
    expect(turnJob).toMatchObject({ command: 'select public.interrupt_stale_turns()' })
    const [held] = await sql`select id from public.reserve_tokens(${user}, 5)`
    const turn = crypto.randomUUID()
    await sql`select public.begin_conversation_turn(${turn}, ${user}, null, ${
      (held as { id: string }).id
    }, 'cron-turn', 'Une question ?', 'Une question ?', '{}', 0)`
    const since = new Date()

    const deadline = Date.now() + 75_000
    let status = 'reserved'
    let turnStatus = 'streaming'
    // the two jobs run at the same minute, each in its own session: both are waited for
    while ((status === 'reserved' || turnStatus === 'streaming') && Date.now() < deadline) {
      await sql`select pg_sleep(1)`
      ;[{ status }] = (await sql`select status from public.reservations where id = ${id}`) as unknown as [{ status: string }]
      ;[{ status: turnStatus }] = (await sql`select status from public.chat_turns where id = ${turn}`) as unknown as [{ status: string }]
    }
    expect(status).toBe('expired')
    expect(turnStatus).toBe('interrupted')
    const [after] = await sql`select token_balance::int as balance from public.wallets where user_id = ${user}`
    expect(after!.balance).toBe((wallet as { balance: number }).balance)
    const runs = await sql`select status from cron.job_run_details where jobid = ${job!.jobid} and start_time >= ${since}`
    expect(runs.map((r) => r.status)).toContain('succeeded')
  }, 90_000)
})
