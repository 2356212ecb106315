// Reserve+finalize cycles per second at 1, 8 and 32 concurrent clients, beside a baseline measured in the
// same run with the same client code: a minimal transaction that locks one row, updates it and inserts
// one row, sent as one statement as each wallet RPC is (and, for reference, the same work as three
// statements in a service transaction). A cycle is two transactions, so 0.5 is the practical ceiling of
// the ratio against the one-statement baseline.
// Then what one cycle writes, table by table (bench/lib/wallet-writes.ts): rows, HOT updates, index entries.
// Run: BENCH_DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres npm run bench:wallet
// (without it: the embedded PGlite, one client only, since PGlite is one connection).
import { createDb, type Sql } from '../functions-shared/db/client.ts'
import { loadConfig } from '../functions-shared/config.ts'
import { asService } from '../functions-shared/db/tx.ts'
import { createDeps } from '../functions-shared/deps.ts'
import { createLogRoot } from '../functions-shared/lib/logger.ts'
import { topUp } from '../functions-shared/wallet/service.ts'
import { finalize, reserve } from '../functions-shared/wallet/reservations.ts'
import { scratchDatabase } from './lib/scratch-db.ts'
import { machine } from './lib/machine.ts'
import { printWrites, writesOf } from './lib/wallet-writes.ts'

const SECONDS = Number(process.env.BENCH_SECONDS ?? 2)
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3)
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!
const serverUrl = process.env.BENCH_DATABASE_URL
const levels = serverUrl ? [1, 8, 32] : [1]

const db = await scratchDatabase('wallet')
machine(db.label)
const url = db.url
const setup = db.sql
await setup.unsafe(`
  create table public.bench_counter (id int primary key, n bigint not null default 0);
  create table public.bench_log (id bigint generated always as identity primary key, counter_id int not null, at timestamptz not null default now());
  grant all on public.bench_counter, public.bench_log to service_role;
  insert into public.bench_counter (id) select g from generate_series(1, 64) g;
`)
const users: string[] = []
for (let i = 0; i < 32; i++) {
  const [row] =
    await setup`insert into auth.users (id, email, created_at, updated_at) values (gen_random_uuid(), ${`bench${i}@example.mr`}, now(), now()) returning id`
  users.push(row!.id as string)
}

async function run(clients: number, body: (sql: Sql, client: number) => Promise<void>): Promise<number> {
  const sql = createDb(url, { max: clients, prepare: true })
  // warm-up: every connection open and every statement prepared before the clock starts
  await Promise.all(Array.from({ length: clients }, (_, client) => body(sql, client)))
  const deadline = performance.now() + SECONDS * 1000
  let done = 0
  await Promise.all(
    Array.from({ length: clients }, async (_, client) => {
      while (performance.now() < deadline) {
        await body(sql, client)
        done++
      }
    }),
  )
  await sql.end()
  return done / SECONDS
}

console.log(
  `database: ${serverUrl ? 'PostgreSQL server' : 'embedded PGlite (one connection)'}; median of ${ROUNDS} alternating runs of ${SECONDS} s\n`,
)
console.log('clients   baseline 1-stmt/s   baseline 3-stmt/s   wallet cycles/s   ratio 1-stmt   ratio 3-stmt')
for (const clients of levels) {
  const sql = createDb(url, { max: clients, prepare: true })
  const deps = createDeps(loadConfig({ LOG_LEVEL: 'silent' }), { sql, logs: createLogRoot({ level: 'silent' }) })
  for (let i = 0; i < clients; i++) {
    await topUp({
      ctx: { deps, requestId: 'bench' },
      principal: { kind: 'service', token: '' },
      input: { user_id: users[i]!, tokens: 10_000_000, amount: 0, currency: 'MRU', payment_method: 'cash' },
    })
  }
  await sql.end()
  // baseline and wallet alternate, ROUNDS times each; the medians are compared
  const baselines: number[] = []
  const txBaselines: number[] = []
  const wallets: number[] = []
  for (let round = 0; round < ROUNDS; round++) {
    txBaselines.push(
      await run(clients, async (pool, client) => {
        // the same work as three statements in a service transaction (asService)
        await asService(pool, async (tx) => {
          await tx`select n from public.bench_counter where id = ${client + 1} for update`
          await tx`update public.bench_counter set n = n + 1 where id = ${client + 1}`
          await tx`insert into public.bench_log (counter_id) values (${client + 1})`
        })
      }),
    )
    baselines.push(
      await run(clients, async (pool, client) => {
        // one statement, one round trip, as each wallet RPC is
        await pool`with locked as (select id from public.bench_counter where id = ${client + 1} for update),
                        bumped as (update public.bench_counter c set n = n + 1 from locked where c.id = locked.id returning c.id)
                   insert into public.bench_log (counter_id) select id from bumped`
      }),
    )
    wallets.push(
      await run(clients, async (pool, client) => {
        const ctx = { deps: { ...deps, sql: pool }, requestId: 'bench' }
        const r = await reserve({ ctx, input: { user_id: users[client]!, estimate: 10 } })
        await finalize({ ctx, input: { reservation_id: r.id, actual: 7, kind: 'manual' } })
      }),
    )
  }
  const [baseline, txBaseline, cycles] = [median(baselines), median(txBaselines), median(wallets)]
  const col = (n: number, w: number) => n.toFixed(0).padStart(w)
  console.log(
    `${String(clients).padStart(7)}   ${col(baseline, 16)}   ${col(txBaseline, 16)}   ${col(cycles, 15)}   ${(cycles / baseline).toFixed(2).padStart(13)}   ${
      (cycles / txBaseline).toFixed(2).padStart(13)
    }`,
  )
}

// what one cycle writes: reserve + finalize as above, and a chat turn's (begin_chat_turn + finalize_chat_turn)
const counted = createDb(url, { max: 1, prepare: true })
printWrites(
  'writes of one reserve + finalize (reserve_tokens, finalize_reservation)',
  await writesOf(counted, async (tx) => {
    const [r] = await tx<{ id: string }[]>`select id from public.reserve_tokens(${users[0]!}, 10, 'writes', 300, 50)`
    await tx`select * from public.finalize_reservation(${r!.id}, 7, 'writes', 'manual', 2)`
  }),
)
printWrites(
  "writes of one chat turn's wallet (begin_chat_turn, finalize_chat_turn)",
  await writesOf(counted, async (tx) => {
    const [r] = await tx<{ reservation_id: string }[]>`
      select reservation_id from public.begin_chat_turn(${users[0]!}, 'writes', array[10, 10, 10], array[50, 0, 0], 300, 50)`
    await tx`select * from public.finalize_chat_turn(${r!.reservation_id}, 7, 'writes', 'chat', 2, 140, 'offline', '{}'::jsonb)`
  }),
)
await counted.end()
await db.close()
