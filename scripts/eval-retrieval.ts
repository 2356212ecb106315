// `npm run eval:retrieval`: does the teacher find the right page? The demo curriculum is synced and
// ingested on a fresh embedded stack, then every labelled question of eval/retrieval-questions.json goes
// through the real POST /chat (JSON, the offline provider unless EVAL_PROVIDER=openai) twice — with the
// grade and subject of its lesson, and without them as a student would ask — for dense-only and for
// hybrid retrieval. One table: page@1 (the first source is the right page), document@1 (the answer's
// first source is the right lesson), document@3 (the right lesson among the first three sources), MRR of the right page, and the clarification rate; the items
// labelled "clarify" (greetings, off-curriculum) are counted apart. With --check, it exits 1 when a
// figure falls below its floor in eval/floors.json. `--json` prints the figures as JSON.
import { mkdtemp, readFile, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { loadConfig, type Config } from '../functions-shared/config.ts'
import { apiKey } from '../functions-shared/lib/keys.ts'
import { createLogRoot } from '../functions-shared/lib/logger.ts'
import { createDb } from '../functions-shared/db/client.ts'
import { startEmbedded } from './lib/embedded-db.ts'
import { migrateRepository } from './lib/migrations.ts'
import { startGateway, type Gateway } from './lib/gateway.ts'
import { ApiClient } from './lib/api-client.ts'
import { syncAndIngest } from './lib/ingest-source.ts'

const root = fileURLToPath(new URL('..', import.meta.url))
const args = new Set(process.argv.slice(2))
const out = (line = '') => process.stdout.write(`${line}\n`)

interface Question {
  id: string
  question: string
  language: 'fr' | 'ar' | 'hassaniya'
  lesson: string | null
  page?: number
  expect?: 'clarify'
  cross_lingual?: boolean
  /** other pages that answer it as well ("lesson:page"): a page of a neighbouring lesson that says the same */
  also?: string[]
  /** the set it comes from: '' for eval/retrieval-questions.json, else one of APART */
  set?: string
}

interface Lesson {
  id: string
  path: string
  grade: string
  subject: string
}

type Mode = 'dense' | 'hybrid'
type Filters = 'with' | 'without'

interface Tally {
  n: number
  page1: number
  doc1: number
  doc3: number
  rr: number
  clarified: number
}

// the sets written apart from the first (each without reading the others or the code), by their tallies'
// prefix and their label in the table; a sealed set's misses and evidence are never printed, so that nobody tunes on its
// questions one by one and its figures stay those of questions retrieval was not made for
const APART = [
  { set: 'fresh', file: 'retrieval-questions-fresh.json', label: 'second set', sealed: false },
  { set: 'third', file: 'retrieval-questions-third.json', label: 'third set', sealed: false },
  { set: 'fourth', file: 'retrieval-questions-fourth.json', label: 'fourth set', sealed: true },
] as const
const apartSet = (set: string | undefined) => APART.find((a) => a.set === set)

const pct = (x: number, n: number) => (n === 0 ? '  -  ' : `${((100 * x) / n).toFixed(1).padStart(5)}%`)

/** EVAL_SETTINGS: a JSON object of settings (docs/configuration.md) and their values, as strings or numbers. */
function evalSettings(text: string | undefined): Record<string, string> {
  if (!text) return {}
  let parsed: unknown
  try {
    parsed = JSON.parse(text)
  } catch {
    throw new Error('EVAL_SETTINGS is not JSON: give an object such as {"RETRIEVAL_TEXT_WEIGHT":"2"}')
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw new Error('EVAL_SETTINGS must be a JSON object of settings')
  return Object.fromEntries(
    Object.entries(parsed).map(([name, value]) => {
      if (typeof value !== 'string' && typeof value !== 'number') throw new Error(`EVAL_SETTINGS: ${name} must be a string or a number`)
      return [name, String(value)]
    }),
  )
}

async function main(): Promise<void> {
  const started = Date.now()
  // the questions retrieval was tuned on, and the sets written apart from them (APART), whose figures tell
  // how retrieval does on questions it was not made for; their tallies are kept apart (`<set>/<mode>/<filters>`)
  const read = async (file: string, set: string) =>
    (JSON.parse(await readFile(`${root}eval/${file}`, 'utf8')) as { questions: Question[] }).questions.map((q) => ({ ...q, set }))
  const questions = [
    ...(await read('retrieval-questions.json', '')),
    ...(await Promise.all(APART.map((a) => read(a.file, a.set)))).flat(),
  ]
  const curriculum = JSON.parse(await readFile(`${root}demo/curriculum.json`, 'utf8')) as { lessons: { id: string; path: string }[] }
  const lessons = new Map<string, Lesson>(
    curriculum.lessons.map((l) => {
      const [, grade = '', subject = ''] = /^fichiers\/([^/]+)\/([^/]+)\//.exec(l.path) ?? []
      return [l.id, { id: l.id, path: l.path, grade, subject }]
    }),
  )
  const answers = (q: Question) => [`${q.lesson}:${q.page}`, ...(q.also ?? [])].map((a) => {
    const [lesson = '', page = ''] = a.split(':')
    return { lesson, page: Number(page) }
  })
  for (const q of questions) for (const a of q.lesson ? answers(q) : []) if (!lessons.has(a.lesson)) throw new Error(`question ${q.id}: unknown lesson ${a.lesson}`)

  // EVAL_MODES=hybrid runs one retrieval mode only (a quicker loop while tuning)
  const modes = (process.env.EVAL_MODES ?? 'dense,hybrid').split(',').filter((m): m is Mode => m === 'dense' || m === 'hybrid')
  // a fresh directory each run (the database is in memory): every run starts from the same empty state
  const dataDir = process.env.EVAL_DATA_DIR ?? (await mkdtemp(join(tmpdir(), 'curriculum-tutor-eval-')))
  const provider = process.env.EVAL_PROVIDER === 'openai' ? 'openai' : 'offline'
  // EVAL_SETTINGS='{"RETRIEVAL_TEXT_WEIGHT":"2"}' measures other settings (the service's own environment is
  // not read, so that every run starts from the defaults)
  const settings = evalSettings(process.env.EVAL_SETTINGS)
  const base = (mode: Mode): Config =>
    loadConfig({
      ...(provider === 'openai' ? process.env : {}),
      ...settings,
      AI_PROVIDER: provider,
      PORT: '0',
      LOG_LEVEL: 'silent',
      DEMO_PORTAL: 'on',
      RETRIEVAL_MODE: mode,
      TIER_FREE_DAILY_LIMIT: '0',
      RATE_LIMIT_CHAT_PER_MINUTE: '1000000',
      RATE_LIMIT_ADMIN_PER_MINUTE: '1000000',
      RATE_LIMIT_PUBLIC_PER_MINUTE: '1000000',
      RATE_LIMIT_AUTH_PER_MINUTE: '1000000',
      EXPIRY_INTERVAL_SECONDS: '0',
      DATA_DIR: dataDir,
    })
  const embedded = await startEmbedded({ port: 0 })
  const sql = createDb(embedded.url, { max: 1, prepare: true })
  const gateways: Partial<Record<Mode, Gateway>> = {}
  try {
    await migrateRepository(sql)
    // EVAL_LOG=info prints each turn's decide_path evidence (stdout, JSON lines)
    const logs = createLogRoot({ level: (process.env.EVAL_LOG ?? 'silent') as 'silent' })
    for (const mode of ['hybrid', 'dense'] as const) gateways[mode] = await startGateway({ config: base(mode), sql, deps: { logs }, embedded: true })
    const serviceKey = await apiKey(base('hybrid').JWT_SECRET, 'service_role')
    const admin = new ApiClient({ url: gateways.hybrid!.url, token: serviceKey })
    if (!args.has('--json')) out(`== retrieval evaluation: ${questions.length} questions, the demo curriculum, the ${provider} provider`)
    await syncAndIngest(admin, 'demo', { deadline: started + 600_000 })

    // the lesson of each document, by the path of its reference
    const docs = await sql`select d.id, r.pdf_source from public.documents d join public.curriculum_references r on r.id = d.reference_id where d.status = 'ready'`
    const docOf = new Map<string, string>()
    for (const l of lessons.values()) {
      const d = docs.find((x) => (x.pdf_source as string).endsWith(l.path))
      if (d) docOf.set(l.id, d.id as string)
    }
    for (const q of questions) for (const a of q.lesson ? answers(q) : []) if (!docOf.has(a.lesson)) throw new Error(`question ${q.id}: lesson ${a.lesson} has no ready document`)

    const stamp = Date.now().toString(36)
    const user = await admin.post('/admin/users', { email: `eval-${stamp}@eval.mr`, password: `eval-${stamp}-Passw0rd`, full_name: 'Évaluation', role: 'student' })
    await admin.post('/wallet/topup', { user_id: user.id, tokens: 10_000_000, amount: 1, currency: 'MRU', payment_method: 'cash', reference: 'retrieval evaluation' })
    const signin = await admin.withToken('').post('/auth/signin', { email: user.email, password: `eval-${stamp}-Passw0rd` })
    const token = signin.data.access_token as string

    const tallies = new Map<string, Tally>()
    const clarifyItems = new Map<string, { n: number; clarified: number }>()
    const misses: string[] = []
    const evidence: string[] = []
    const lessonLabel = (q: { lesson?: string | null }) => (q.lesson ? 'curriculum' : 'off-curriculum')
    for (const mode of modes) {
      const student = new ApiClient({ url: gateways[mode]!.url, token })
      for (const filters of ['with', 'without'] as const) {
        const tally: Tally = { n: 0, page1: 0, doc1: 0, doc3: 0, rr: 0, clarified: 0 }
        const apart = new Map<string, Tally>(APART.map((a) => [a.set, { n: 0, page1: 0, doc1: 0, doc3: 0, rr: 0, clarified: 0 }]))
        const clarify = { n: 0, clarified: 0 }
        const cross: Tally = { n: 0, page1: 0, doc1: 0, doc3: 0, rr: 0, clarified: 0 }
        for (const q of questions) {
          if (!q.lesson && filters === 'with') continue
          const lesson = q.lesson ? lessons.get(q.lesson)! : null
          const body = { message: q.question, stream: false, ...(filters === 'with' && lesson ? { grade: lesson.grade, subject: lesson.subject } : {}) }
          const res = await student.post('/chat', body)
          const sources = (res.sources ?? []) as { document_id: string; page_number: number }[]
          if (args.has('--evidence') && filters === 'without' && !q.cross_lingual && !apartSet(q.set)?.sealed) {
            // the inference's evidence is recorded with the turn's usage
            const [row] = await sql`select details -> 'inference' as inference from public.usage_log where request_id = ${res.request_id as string}`
            const ev = (row?.inference ?? {}) as { best_coverage?: number; best_similarity?: number; subjects?: Record<string, number> }
            const weights = Object.entries(ev.subjects ?? {}).map(([s, w]) => `${s} ${w}`).join(', ')
            evidence.push(`${mode} ${q.id} ${lessonLabel(q)} coverage ${ev.best_coverage ?? '-'} similarity ${ev.best_similarity ?? '-'} → ${res.path} ${res.subject ?? '-'}${weights ? ` (${weights})` : ''}`)
          }
          if (!lesson) {
            clarify.n++
            if (res.path === 'clarify') clarify.clarified++
            else if (args.has('--misses')) misses.push(`${mode} ${filters} ${q.id} [${q.language}] ${q.question} → ${res.path} ${res.subject ?? '-'} ${res.reason ?? ''} (want clarify)`)
            continue
          }
          const right = answers(q).map((a) => ({ doc: docOf.get(a.lesson)!, page: a.page }))
          const t = q.cross_lingual ? cross : (apart.get(q.set ?? '') ?? tally)
          t.n++
          if (res.path === 'clarify') t.clarified++
          const rank = sources.findIndex((s) => right.some((r) => s.document_id === r.doc && s.page_number === r.page)) + 1
          const rightDoc = (s: { document_id: string } | undefined) => right.some((r) => s?.document_id === r.doc)
          if (rank === 1) t.page1++
          if (rank > 0) t.rr += 1 / rank
          if (rightDoc(sources[0])) t.doc1++
          if (sources.slice(0, 3).some(rightDoc)) t.doc3++
          if (rank !== 1 && !q.cross_lingual && !apartSet(q.set)?.sealed && args.has('--misses')) misses.push(`${mode} ${filters} ${q.id} [${q.language}] ${q.question} → ${res.path} ${res.subject ?? '-'} ${sources.map((s) => `${[...docOf].find(([, d]) => d === s.document_id)?.[0] ?? '?'}:${s.page_number}`).join(' ')} (want ${[`${lesson.id}:${q.page}`, ...(q.also ?? [])].join(' or ')})`)
        }
        tallies.set(`${mode}/${filters}`, tally)
        tallies.set(`${mode}/${filters}/cross_lingual`, cross)
        for (const [set, t] of apart) tallies.set(`${set}/${mode}/${filters}`, t)
        if (filters === 'without') clarifyItems.set(mode, clarify)
      }
    }

    const figures = Object.fromEntries(
      [...tallies].filter(([, t]) => t.n > 0).map(([key, t]) => [key, { questions: t.n, page_at_1: t.page1 / t.n, document_at_1: t.doc1 / t.n, document_at_3: t.doc3 / t.n, mrr: t.rr / t.n, clarification_rate: t.clarified / t.n }]),
    )
    for (const [mode, c] of clarifyItems) (figures as Record<string, unknown>)[`${mode}/off_curriculum`] = { items: c.n, clarified: c.n === 0 ? 0 : c.clarified / c.n }
    if (args.has('--json')) out(JSON.stringify(figures, null, 2))
    else {
      const first = questions.filter((q) => q.set === '')
      const same = first.filter((q) => q.lesson && !q.cross_lingual).length
      out(`\n${new Date().toISOString().slice(0, 10)}, node ${process.version}; ${same} questions on ${docOf.size} lessons, ${first.length - same - first.filter((q) => !q.lesson).length} cross-lingual, ${first.filter((q) => !q.lesson).length} off-curriculum messages; sets written apart: ${APART.map((a) => `${questions.filter((q) => q.set === a.set).length} (${a.label}${a.sealed ? ', sealed: its misses are not printed' : ''})`).join(', ')}\n`)
      out('retrieval  filters   questions        page@1   doc@1   doc@3    MRR    clarified  | off-curriculum clarified')
      for (const mode of modes) {
        for (const filters of ['with', 'without'] as const) {
          for (const part of ['', '/cross_lingual', ...APART.map((a) => a.set)]) {
            const a = apartSet(part)
            const t = tallies.get(a ? `${part}/${mode}/${filters}` : `${mode}/${filters}${part}`)!
            if (t.n === 0) continue
            const c = clarifyItems.get(mode)!
            const label = a ? `${t.n} ${a.label}` : part ? `${t.n} cross-lingual` : `${t.n} same language`
            out(`${mode.padEnd(10)} ${filters.padEnd(8)}  ${label.padEnd(16)} ${pct(t.page1, t.n)}  ${pct(t.doc1, t.n)}  ${pct(t.doc3, t.n)}  ${(t.rr / t.n).toFixed(3)}   ${pct(t.clarified, t.n)}   | ${filters === 'without' && !part ? pct(c.clarified, c.n) : ''}`)
          }
        }
      }
      for (const m of misses) out(m)
      for (const e of evidence) out(e)
      out(`\nevaluation finished in ${((Date.now() - started) / 1000).toFixed(1)} s`)
    }
    if (args.has('--check')) {
      const floors = JSON.parse(await readFile(`${root}eval/floors.json`, 'utf8')) as Record<string, Record<string, number>>
      const below: string[] = []
      for (const [key, want] of Object.entries(floors)) {
        if (key.startsWith('_')) continue
        const got = (figures as Record<string, Record<string, number>>)[key]
        for (const [metric, floor] of Object.entries(want)) {
          const value = got?.[metric]
          const ceiling = metric === 'clarification_rate'
          if (value === undefined || (ceiling ? value > floor : value < floor)) below.push(`${key} ${metric} ${value?.toFixed(3)} (${ceiling ? 'ceiling' : 'floor'} ${floor})`)
        }
      }
      if (below.length > 0) {
        process.stderr.write(`retrieval evaluation below its floors: ${below.join('; ')}\n`)
        process.exitCode = 1
      } else out('every figure is at or above its floor (eval/floors.json)')
    }
  } finally {
    for (const g of Object.values(gateways)) await g?.close(1000)
    await sql.end({ timeout: 1 })
    await embedded.close()
    if (!process.env.EVAL_DATA_DIR) await rm(dataDir, { recursive: true, force: true })
  }
}

await main()
