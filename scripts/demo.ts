// deno-lint-ignore-file no-explicit-any -- the API's JSON, read field by field
// `npm run demo`: the whole mission, offline, in about a minute. Against the stack at DEMO_URL (or
// http://HOST:PORT when one answers there), else a stack started here on the embedded database: creates
// an admin and a student (or signs in the ones of an earlier run), syncs the bundled demo portal, ingests every discovered reference with live
// progress, shows the catalogue, asks the teacher a question in French and one in Arabic (streamed,
// with sources), and prints the student's wallet and ledger. Exits non-zero on any failure.
import { jwtSecretGiven, loadConfigOrExit } from './lib/load-config.ts'
import { apiKey } from '../functions-shared/lib/keys.ts'
import { createLogRoot } from '../functions-shared/lib/logger.ts'
import { createHmac } from 'node:crypto'
import { ApiCallError, ApiClient } from './lib/api-client.ts'
import { type Stack, startStack } from './lib/stack.ts'
import { explainStartup } from './lib/startup-error.ts'
import { syncAndIngest } from './lib/ingest-source.ts'
import { keyMismatch } from './lib/status.ts'

const config = loadConfigOrExit('demo')
const out = (line = '') => process.stdout.write(`${line}\n`)
// a reader that stops early (| head) is not an error
process.stdout.on('error', (err: NodeJS.ErrnoException) => (err.code === 'EPIPE' ? process.exit(0) : undefined))
const DEADLINE_MS = Number(process.env.DEMO_TIMEOUT_MS ?? 110_000)
const started = Date.now()

async function reachable(url: string): Promise<boolean> {
  try {
    return (await fetch(`${url}/functions/v1/health`, { signal: AbortSignal.timeout(1500) })).ok
  } catch {
    return false
  }
}

let targetUrl = process.env.DEMO_URL ?? `http://${config.HOST}:${config.PORT}`

async function main(): Promise<void> {
  let stack: Stack | undefined
  let url = targetUrl
  if (!process.env.DEMO_URL && (config.PORT === 0 || !(await reachable(url)))) {
    out('No stack is running: starting one on the embedded database…')
    stack = await startStack(config, createLogRoot({ level: process.env.DEMO_LOG_LEVEL === undefined ? 'warn' : config.LOG_LEVEL }), {
      folderJwtSecret: !jwtSecretGiven(),
    })
    url = targetUrl = stack.gateway.url
  }
  try {
    await run(
      url,
      stack?.serviceKey ?? process.env.SUPABASE_SERVICE_ROLE_KEY ?? config.SUPABASE_SERVICE_ROLE_KEY ?? (await apiKey(config.JWT_SECRET, 'service_role')),
    )
  } finally {
    await stack?.close()
  }
}

async function run(url: string, serviceKey: string): Promise<void> {
  const mismatch = await keyMismatch(url, serviceKey)
  if (mismatch) throw new Error(mismatch)
  const service = new ApiClient({
    url,
    token: serviceKey,
    onRateLimited: ({ seconds, method, path }) => out(`rate limit   ${method} ${path.split('?')[0]}: waiting ${seconds} s`),
  })
  out(`\n== curriculum-tutor demo on ${url}`)

  // 1. accounts: the same two on every run against a stack, with a password derived from its service key
  // (nobody without that key can sign in as them); created on the first run
  const password = `demo-${createHmac('sha256', serviceKey).update('curriculum-tutor demo accounts').digest('hex').slice(0, 20)}-Pw0`
  const account = async (email: string, fullName: string, role: string): Promise<{ email: string; token: string; created: boolean }> => {
    // through Auth itself (as supabase-js signs in), so the demo leaves the API's /auth endpoints, and their
    // 5 requests a minute per address, to the person following the README
    const signIn = async (address: string) =>
      (await service.withToken('').post('/auth/v1/token?grant_type=password', { email: address, password }, { apikey: serviceKey })).access_token as string
    try {
      return { email, token: await signIn(email), created: false }
    } catch (err) {
      // GoTrue's answer to an unknown address or another password: 400 invalid_credentials
      if (!(err instanceof ApiCallError) || (err.status !== 400 && err.status !== 401)) throw err
    }
    // not there yet, or made with another service key: a new account (stamped when the address is taken)
    const created = await service.post('/admin/users', { email, password, full_name: fullName, role }).catch(async (err: unknown) => {
      if (!(err instanceof ApiCallError) || err.status !== 409) throw err
      return service.post('/admin/users', { email: email.replace('@', `-${Date.now().toString(36)}@`), password, full_name: fullName, role })
    })
    return { email: created.email as string, token: await signIn(created.email as string), created: true }
  }
  const admin = await account('admin@demo.mr', 'Admin Démo', 'admin')
  const student = await account('eleve@demo.mr', 'Élève Démo', 'student')
  const adminApi = service.withToken(admin.token)
  const studentApi = service.withToken(student.token)
  out(
    `accounts     admin ${admin.email}, student ${student.email} (${
      admin.created || student.created ? 'created' : 'from an earlier run'
    }; signed in, the admin works with its own token)`,
  )
  // a student whose earlier runs spent the welcome bonus gets it again, so the questions are paid for
  const before = await studentApi.get('/wallet/balance')
  if (before.token_balance < 50) {
    const me = await studentApi.get('/me')
    await adminApi.post('/wallet/topup', {
      user_id: me.id,
      tokens: 50 - before.token_balance,
      amount: 0,
      currency: 'MRU',
      payment_method: 'cash',
      reference: 'demo run',
    })
    out(`wallet       topped up to 50 tokens for this run`)
  }

  // 2-3. sync the demo portal, ingest every discovered reference, and watch the jobs
  // the demo portal is served with the embedded database, or with DEMO_PORTAL=on (it lives on loopback,
  // which downloads may reach only then): without it the source is absent or its pages unreachable
  const hint =
    ' (the demo portal is served by a stack on the embedded database, or one started with DEMO_PORTAL=on: with DATABASE_URL set, start it with DEMO_PORTAL=on)'
  const sources = ((await service.withToken('').get('/scraping/sources')).sources as string[]) ?? []
  if (!sources.includes('demo')) throw new Error(`the stack at ${url} has no demo source${hint}`)
  await syncAndIngest(adminApi, 'demo', {
    deadline: started + DEADLINE_MS,
    onSync: (sync) =>
      out(
        `sync         run ${sync.run_id}: ${sync.status}; found ${sync.found_count}, new ${sync.new_count}, duplicates ${sync.duplicates}, quality failures ${sync.quality_failed}, errors ${sync.errors}, already known ${sync.known}`,
      ),
    onQueued: (n) => out(`ingest       ${n} reference(s) queued${n === 0 ? ' (everything was ingested by an earlier run)' : ''}`),
    onProgress: out,
  }).catch((err: Error) => {
    throw new Error(`${err.message}${/loopback|blocked|HTTP 404|ECONNREFUSED/.test(err.message) ? hint : ''}`)
  })

  // 4. the public catalogue
  const catalogue = await service.withToken('').get('/curriculum/textbooks?limit=50')
  out(`\ncatalogue    ${catalogue.textbooks.length} textbook(s) ready`)
  for (const t of catalogue.textbooks as { title: string; grade: string; subject: string; language: string; page_count: number; chunk_count: number }[]) {
    out(`  - [${t.language}] ${t.grade} ${t.subject}: ${t.title} (${t.page_count} pages, ${t.chunk_count} chunks)`)
  }

  // 5. the teacher, in French and in Arabic
  for (const message of ['Comment résoudre une équation du premier degré ?', 'ما هي أركان الإسلام؟']) {
    out(`\nstudent      ${message}`)
    let outcome = ''
    process.stdout.write('teacher      ')
    for await (const e of studentApi.stream('/chat', { message, stream: true })) {
      if (e.event === 'meta') out(`(${e.data.path}, ${e.data.language}, subject ${e.data.subject ?? '-'}, ${e.data.reservation.estimated} tokens reserved)`)
      else if (e.event === 'sources') {
        for (const s of e.data.sources) out(`  [${s.n}] ${s.title} p.${s.page_number} (score ${s.score}) ${s.source_url}`)
        process.stdout.write('  ')
      } else if (e.event === 'delta') process.stdout.write(e.data.text)
      else if (e.event === 'done') {
        outcome = e.data.outcome
        out(
          `\n  → ${e.data.outcome}${
            e.data.extractive ? ' (extractive: quoted from the curriculum, offline provider)' : ''
          }; charged ${e.data.usage.charged} tokens, balance ${e.data.usage.token_balance}`,
        )
      } else if (e.event === 'error') throw new Error(`chat error: ${e.data.error}: ${e.data.message}`)
    }
    if (outcome !== 'answered') throw new Error(`the teacher did not answer (${outcome || 'no done event'})`)
  }

  // 6. the student's wallet and ledger
  const balance = await studentApi.get('/wallet/balance')
  // every entry, over as many pages as earlier runs made, so the sum is the balance's
  const ledger = { items: [] as Record<string, any>[] }
  for (let offset = 0;; offset += 100) {
    const page = await studentApi.get(`/wallet/ledger?limit=100&offset=${offset}`)
    ledger.items.push(...page.items)
    if (page.items.length < 100) break
  }
  out(`\nwallet       ${balance.token_balance} tokens, tier ${balance.subscription_tier}, ${balance.limits.turns_today} turn(s) today`)
  // this run's entries (the newest first in the API), oldest first
  for (const e of ledger.items.slice(0, 12).reverse() as { delta: number; reason: string; balance_after: number; request_id: string | null }[]) {
    out(`  ${String(e.delta).padStart(5)}  ${e.reason.padEnd(20)} balance ${String(e.balance_after).padStart(4)}  ${e.request_id ?? ''}`)
  }
  const sum = (ledger.items as { delta: number }[]).reduce((s, e) => s + e.delta, 0)
  if (sum !== balance.token_balance) throw new Error(`the ledger (${sum}) does not add up to the balance (${balance.token_balance})`)
  out(`\ndemo finished in ${((Date.now() - started) / 1000).toFixed(1)} s`)
}

try {
  await main()
  process.exit(0)
} catch (err) {
  const sentence = explainStartup(err) ?? unreachable(err) ?? (err as Error).message
  process.stderr.write(`\ndemo failed: ${sentence}\n`)
  process.exit(1)
}

/** fetch's bare "fetch failed", with the URL it could not reach and what to do. */
function unreachable(err: unknown): string | null {
  if (!(err instanceof TypeError && /fetch failed/.test(err.message))) return null
  const cause = (err.cause as { code?: string; message?: string } | undefined) ?? {}
  return `cannot reach the stack at ${targetUrl} (${cause.code ?? cause.message ?? 'no answer'}); start it with npm start, or set DEMO_URL to a running stack`
}
