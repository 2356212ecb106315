// deno-lint-ignore-file no-explicit-any -- the API's JSON, read field by field
// `npm run admin -- <command>`: the operator's tasks over the HTTP API, so it works against the local
// stack and a hosted project alike. Credentials: --token (an admin's access token or the service-role
// key; env CT_TOKEN), or --admin-key (deprecated X-Admin-Key; env ADMIN_API_KEY); against a loopback URL
// with neither, the local service-role key (from JWT_SECRET). --json prints the API's answers as JSON.
import { parseArgs } from 'node:util'
import { ApiCallError } from './lib/api-client.ts'
import { client, DomainError, need, out, table, UsageError, userId } from './lib/admin-cli.ts'
import { watch } from './lib/admin-watch.ts'
import { queueIngestion } from './lib/ingest-source.ts'

const USAGE = `usage: npm run admin -- <command> [arguments] [--url URL] [--token TOKEN | --admin-key KEY] [--json]

commands
  create-admin <email> <password> [--name NAME]   create an admin account (email pre-confirmed)
  users                                           list accounts and roles
  set-role <user id|email> <admin|teacher|student>
  sources                                         scraper sources
  sync <source>                                   run the scraper on a source now
  references [--source S] [--status S]            discovered curriculum files
  references set <reference id> [--grade G] [--subject S] [--title T] [--language fr|ar|hassaniya]
                 [--category C] [--major M] [--weight N]    fix a reference's metadata
  ingest <reference id> [--force]                 queue one reference for ingestion
  ingest --all [--source S]                       queue every discovered reference that has a grade
                                                  and a subject (the others are listed, not queued)
  dispatch [--all]                                start the oldest queued job (--all: until none is queued)
  jobs [--status S]                               ingestion jobs
  watch [--dispatch] [--interval MS]              live job progress until nothing is queued or running
  requeue <job id>                                a failed job back to the queue
  topup <user id|email> <tokens> --amount A [--currency MRU] [--method cash] [--reference R] [--idempotency-key K]
  stats                                           dashboard statistics

URL: --url, env CT_URL, default http://HOST:PORT of the local stack (http://127.0.0.1:54321).`

const { values: flags, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    url: { type: 'string' },
    token: { type: 'string' },
    'admin-key': { type: 'string' },
    json: { type: 'boolean', default: false },
    name: { type: 'string' },
    source: { type: 'string' },
    status: { type: 'string' },
    force: { type: 'boolean', default: false },
    all: { type: 'boolean', default: false },
    dispatch: { type: 'boolean', default: false },
    interval: { type: 'string', default: '500' },
    amount: { type: 'string' },
    currency: { type: 'string', default: 'MRU' },
    method: { type: 'string', default: 'cash' },
    reference: { type: 'string' },
    'idempotency-key': { type: 'string' },
    grade: { type: 'string' },
    subject: { type: 'string' },
    title: { type: 'string' },
    language: { type: 'string' },
    category: { type: 'string' },
    major: { type: 'string' },
    weight: { type: 'string' },
    help: { type: 'boolean', short: 'h', default: false },
  },
})

// a reader that stops early (| head) is not an error
process.stdout.on('error', (err: NodeJS.ErrnoException) => (err.code === 'EPIPE' ? process.exit(0) : undefined))

async function main(): Promise<void> {
  const [command, ...args] = positionals
  if (flags.help || !command) return out(USAGE)
  const api = await client(flags)
  const print = (data: unknown, human: () => void): void => (flags.json ? out(JSON.stringify(data, null, 2)) : human())
  const query = (params: Record<string, string | undefined>) => {
    const q = new URLSearchParams(Object.entries(params).filter((e): e is [string, string] => e[1] !== undefined))
    return q.size > 0 ? `?${q}` : ''
  }

  switch (command) {
    case 'create-admin': {
      const profile = await api.post('/admin/users', {
        email: need(args[0], 'email'),
        password: need(args[1], 'password'),
        full_name: flags.name ?? 'Administrator',
        role: 'admin',
      })
      return print(profile, () => out(`admin created: ${profile.email} (${profile.id})`))
    }
    case 'users': {
      const page = await api.get('/admin/users?limit=200')
      return print(page, () => {
        table(page.items, ['id', 'email', 'full_name', 'role', 'hint_level', 'created_at'])
        out(`${page.total} account(s)`)
      })
    }
    case 'set-role': {
      const id = await userId(api, need(args[0], 'user id or email'))
      const profile = await api.patch(`/admin/users/${id}/role`, { role: need(args[1], 'role') })
      return print(profile, () => out(`${profile.email} is now ${profile.role} (effective at the next token)`))
    }
    case 'sources': {
      const list = await api.get('/scraping/sources')
      return print(list, () => list.sources.forEach((s: string) => out(s)))
    }
    case 'sync': {
      const run = await api.post(`/scraping/${encodeURIComponent(need(args[0], 'source'))}/sync`)
      print(run, () => {
        out(
          `run ${run.run_id}: ${run.status}; found ${run.found_count}, new ${run.new_count}, duplicates ${run.duplicates}, quality failures ${run.quality_failed}, errors ${run.errors}, already known ${run.known}`,
        )
        if (run.needs_metadata > 0) {
          out(
            `${run.needs_metadata} new reference(s) have no grade or subject and were not queued: \`references --status discovered\`, then \`references set <id> --grade … --subject …\``,
          )
        }
      })
      if (run.status !== 'completed') process.exitCode = 1
      return
    }
    case 'references': {
      if (args[0] === 'set') {
        const id = need(args[1], 'reference id')
        const patch: Record<string, string | number> = {}
        for (const field of ['grade', 'subject', 'title', 'language', 'category', 'major'] as const) {
          if (flags[field] !== undefined) patch[field] = flags[field]!
        }
        if (flags.weight !== undefined) {
          if (!/^-?\d+$/.test(flags.weight)) throw new UsageError('--weight takes an integer')
          patch.weight = Number.parseInt(flags.weight, 10)
        }
        if (Object.keys(patch).length === 0) {
          throw new UsageError('references set needs at least one of --grade --subject --title --language --category --major --weight')
        }
        const ref = await api.patch(`/admin/references/${encodeURIComponent(id)}`, patch)
        return print(
          ref,
          () =>
            out(
              `reference ${ref.id}: grade ${ref.grade ?? '-'}, subject ${ref.subject ?? '-'}, language ${ref.language ?? '-'}, title ${
                ref.title ?? '-'
              } (${ref.status})`,
            ),
        )
      }
      if (args[0] !== undefined) throw new UsageError(`unknown references subcommand ${args[0]}`)
      const path = flags.source ? `/scraping/${encodeURIComponent(flags.source)}/references` : '/admin/references'
      const page = await api.get(`${path}${query({ status: flags.status, limit: '200' })}`)
      return print(page, () => {
        table(page.items, ['id', 'status', 'source', 'grade', 'subject', 'language', 'title'])
        out(`${page.total} reference(s)`)
      })
    }
    case 'ingest': {
      if (!flags.all) {
        const job = await api.post(`/admin/ingest/${need(args[0], 'reference id (or --all)')}${flags.force ? '?force=true' : ''}`)
        return print(job, () => out(`queued: job ${job.job_id} for reference ${job.reference_id}`))
      }
      const path = flags.source ? `/scraping/${encodeURIComponent(flags.source)}/references` : '/admin/references'
      const refs = (await api.get(`${path}?status=discovered&limit=200`)).items as {
        id: string
        title: string | null
        grade: string | null
        subject: string | null
      }[]
      // a reference without a grade or subject has no namespace: the API would refuse it (409), so it is
      // listed for the operator to fix instead of stopping the batch
      const blank = (v: string | null) => v === null || v.trim() === ''
      const skipped = refs.filter((r) => blank(r.grade) || blank(r.subject))
      const jobs = await queueIngestion(api, refs.filter((r) => !skipped.includes(r)).map((r) => r.id))
      return print({ queued: jobs, needs_metadata: skipped.map((r) => r.id) }, () => {
        out(`${jobs.length} reference(s) queued${jobs.length ? '; run `dispatch --all` or `watch --dispatch`' : ''}`)
        if (skipped.length > 0) {
          out(`${skipped.length} reference(s) without a grade or subject, not queued; fix each with \`references set <id> --grade … --subject …\`:`)
          for (const r of skipped) out(`  ${r.id}  grade ${r.grade ?? '-'}  subject ${r.subject ?? '-'}  ${r.title ?? ''}`)
        }
      })
    }
    case 'dispatch': {
      const results: Record<string, any>[] = []
      do {
        const r = await api.post('/admin/jobs/dispatch')
        results.push(r)
        if (r.status === 'idle') break
      } while (flags.all)
      return print(flags.all ? { dispatched: results } : results[0], () => {
        const started = results.filter((r) => r.status === 'dispatched')
        out(started.length ? started.map((r) => `dispatched job ${r.job_id}`).join('\n') : 'idle: nothing is queued')
      })
    }
    case 'jobs': {
      const page = await api.get(`/admin/jobs${query({ status: flags.status, limit: '200' })}`)
      return print(page, () => {
        const rows = (page.items as Record<string, any>[]).map((j) => ({
          ...j,
          // pages read / pages, and how many of them the recognizer read; a queued scan waits for a Node worker
          pages: j.progress.pages_total === null
            ? (j.needs_ocr && j.status === 'queued' ? 'needs OCR' : '')
            : `${j.progress.pages_done}/${j.progress.pages_total}`,
          ocr_pages: j.progress.pages_ocr,
        }))
        table(rows, ['id', 'status', 'pages', 'ocr_pages', 'chunks_created', 'vectors_upserted', 'retry_count', 'error_message', 'updated_at'])
        out(`${page.total} job(s)`)
      })
    }
    case 'watch':
      return watch(api, flags)
    case 'requeue': {
      const job = await api.post(`/admin/jobs/${need(args[0], 'job id')}/requeue`)
      return print(job, () => out(`job ${job.id} is ${job.status} (retry ${job.retry_count})`))
    }
    case 'topup': {
      const id = await userId(api, need(args[0], 'user id or email'))
      const tokens = Number(need(args[1], 'tokens'))
      const body = {
        user_id: id,
        tokens,
        amount: Number(need(flags.amount, '--amount')),
        currency: flags.currency,
        payment_method: flags.method,
        ...(flags.reference ? { reference: flags.reference } : {}),
      }
      const tx = await api.post('/wallet/topup', body, flags['idempotency-key'] ? { 'idempotency-key': flags['idempotency-key'] } : {})
      return print(
        tx,
        () =>
          out(
            `${
              tx.replayed ? 'already done (same idempotency key): ' : ''
            }+${tx.tokens} tokens for ${id}; balance ${tx.new_balance}; transaction ${tx.transaction_id}`,
          ),
      )
    }
    case 'stats': {
      const stats = await api.get('/admin/stats')
      return print(stats, () => {
        for (const [group, values] of Object.entries(stats)) {
          out(
            `${group.padEnd(14)} ${
              typeof values === 'object' && values !== null
                ? Object.entries(values).map(([k, v]) => `${k} ${typeof v === 'object' ? JSON.stringify(v) : v}`).join(', ')
                : String(values)
            }`,
          )
        }
      })
    }
    default:
      throw new UsageError(`unknown command ${command}`)
  }
}

try {
  await main()
} catch (err) {
  if (err instanceof UsageError) {
    process.stderr.write(`admin: ${err.message}\n\n${USAGE}\n`)
    process.exit(2)
  }
  if (err instanceof ApiCallError || err instanceof DomainError) {
    process.stderr.write(`admin: ${err.message}\n`)
    process.exit(1)
  }
  if (err instanceof TypeError && /fetch failed/.test(err.message)) {
    process.stderr.write(`admin: cannot reach the API (${(err.cause as Error | undefined)?.message ?? err.message}); is the stack running (npm start)?\n`)
    process.exit(1)
  }
  throw err
}
