// `npm run eval:retrieval`: does the teacher find the right page? The demo curriculum is synced and
// ingested on a fresh embedded stack, then every labelled question of eval/retrieval-questions.json goes
// through the real POST /chat (JSON, the offline provider unless EVAL_PROVIDER=openai) twice — with the
// grade and subject of its lesson, and without them as a student would ask — for dense-only and for
// hybrid retrieval. One table: page@1 (the first source is the right page), document@1 (the answer's
// first source is the right lesson), document@3 (the right lesson among the first three sources), MRR of the right page, and the clarification rate; the items
// labelled "clarify" (greetings, off-curriculum) are counted apart. Then, on hybrid retrieval, the
// two-turn dialogues of eval/retrieval-dialogues.json: the first question without grade and subject
// (a new conversation), the elliptical follow-up in that conversation (`conversation_id`), and the same
// follow-up alone, as the baseline that tells what the conversation adds. With --check, it exits 1 when a
// figure falls below its floor in eval/floors.json. `--json` prints the figures as JSON.
// The labelled sets are read in scripts/lib/eval-retrieval-sets.ts, an answer scored in scripts/lib/eval-retrieval-scoring.ts,
// the figures reported in scripts/lib/eval-retrieval-report.ts.
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { type Config, loadConfig } from '../functions-shared/config.ts'
import { apiKey } from '../functions-shared/lib/keys.ts'
import { createLogRoot } from '../functions-shared/lib/logger.ts'
import { createDb } from '../functions-shared/db/client.ts'
import { startEmbedded } from './lib/embedded-db.ts'
import { migrateRepository } from './lib/migrations.ts'
import { type Gateway, startGateway } from './lib/gateway.ts'
import { ApiClient } from './lib/api-client.ts'
import { syncAndIngest } from './lib/ingest-source.ts'
import { answers, APART, apartSet, type Dialogue, DIALOGUE_PARTS, loadEvalSets, type Turn, turns } from './lib/eval-retrieval-sets.ts'
import { score, type Sources, type Tally } from './lib/eval-retrieval-scoring.ts'
import { checkFloors, figuresOf, out, printReport, type Run } from './lib/eval-retrieval-report.ts'

const root = fileURLToPath(new URL('..', import.meta.url))
const args = new Set(process.argv.slice(2))

type Mode = 'dense' | 'hybrid'
type Filters = 'with' | 'without'

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
  const { questions, lessons, dialogues } = await loadEvalSets(root)

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
    if (!args.has('--json')) {
      out(
        `== retrieval evaluation: ${questions.length} questions${
          modes.includes('hybrid') ? ` and ${dialogues.length} two-turn dialogues` : ''
        }, the demo curriculum, the ${provider} provider`,
      )
    }
    await syncAndIngest(admin, 'demo', { deadline: started + 600_000 })

    // the lesson of each document, by the path of its reference
    const docs =
      await sql`select d.id, r.pdf_source from public.documents d join public.curriculum_references r on r.id = d.reference_id where d.status = 'ready'`
    const docOf = new Map<string, string>()
    for (const l of lessons.values()) {
      const d = docs.find((x) => (x.pdf_source as string).endsWith(l.path))
      if (d) docOf.set(l.id, d.id as string)
    }
    for (const q of questions) {
      for (const a of q.lesson ? answers(q) : []) if (!docOf.has(a.lesson)) throw new Error(`question ${q.id}: lesson ${a.lesson} has no ready document`)
    }
    for (const d of dialogues) {
      for (const [, t] of turns(d)) {
        for (const a of answers(t)) if (!docOf.has(a.lesson)) throw new Error(`dialogue ${d.id}: lesson ${a.lesson} has no ready document`)
      }
    }

    // a student with a balance that pays every turn asked of it (a turn reserves at most a few thousand tokens)
    const stamp = Date.now().toString(36)
    const newStudent = async (name: string): Promise<string> => {
      const password = `eval-${stamp}-Passw0rd`
      const user = await admin.post('/admin/users', { email: `${name}-${stamp}@eval.mr`, password, full_name: 'Évaluation', role: 'student' })
      await admin.post('/wallet/topup', {
        user_id: user.id,
        tokens: 10_000_000,
        amount: 1,
        currency: 'MRU',
        payment_method: 'cash',
        reference: 'retrieval evaluation',
      })
      const signin = await admin.withToken('').post('/auth/signin', { email: user.email, password })
      return signin.data.access_token as string
    }
    const token = await newStudent('eval')
    const sourceLabel = (s: { document_id: string; page_number: number }) => `${[...docOf].find(([, d]) => d === s.document_id)?.[0] ?? '?'}:${s.page_number}`

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
            evidence.push(
              `${mode} ${q.id} ${lessonLabel(q)} coverage ${ev.best_coverage ?? '-'} similarity ${ev.best_similarity ?? '-'} → ${res.path} ${
                res.subject ?? '-'
              }${weights ? ` (${weights})` : ''}`,
            )
          }
          if (!lesson) {
            clarify.n++
            if (res.path === 'clarify') clarify.clarified++
            else if (args.has('--misses')) {
              misses.push(`${mode} ${filters} ${q.id} [${q.language}] ${q.question} → ${res.path} ${res.subject ?? '-'} ${res.reason ?? ''} (want clarify)`)
            }
            continue
          }
          const right = answers(q).map((a) => ({ doc: docOf.get(a.lesson)!, page: a.page }))
          const t = q.cross_lingual ? cross : (apart.get(q.set ?? '') ?? tally)
          const rank = score(t, res, right)
          if (rank !== 1 && !q.cross_lingual && !apartSet(q.set)?.sealed && args.has('--misses')) {
            misses.push(
              `${mode} ${filters} ${q.id} [${q.language}] ${q.question} → ${res.path} ${res.subject ?? '-'} ${sources.map(sourceLabel).join(' ')} (want ${
                [`${lesson.id}:${q.page}`, ...(q.also ?? [])].join(' or ')
              })`,
            )
          }
        }
        tallies.set(`${mode}/${filters}`, tally)
        tallies.set(`${mode}/${filters}/cross_lingual`, cross)
        for (const [set, t] of apart) tallies.set(`${set}/${mode}/${filters}`, t)
        if (filters === 'without') clarifyItems.set(mode, clarify)
      }
    }

    // the dialogues, on hybrid retrieval, by a student of their own: the first question without grade and
    // subject opens a conversation; the follow-up is asked in it (`conversation_id`), then alone (a new
    // conversation), so that the two rows differ by the conversation only
    const dialogueTallies = new Map<string, Tally>(DIALOGUE_PARTS.map((p) => [p.part, { n: 0, page1: 0, doc1: 0, doc3: 0, rr: 0, clarified: 0 }]))
    let inherited = 0
    let noConversation = 0
    const dialoguesStarted = Date.now()
    if (modes.includes('hybrid') && dialogues.length > 0) {
      const student = new ApiClient({ url: gateways.hybrid!.url, token: await newStudent('eval-dialogues') })
      const ask = (message: string, conversationId?: string) =>
        student.post('/chat', { message, stream: false, ...(conversationId ? { conversation_id: conversationId } : {}) })
      const rightOf = (t: Turn) => answers(t).map((a) => ({ doc: docOf.get(a.lesson)!, page: a.page }))
      const answered = (res: Record<string, unknown>) =>
        `${res.path} ${res.subject ?? '-'} ${res.grade ?? '-'} ${res.reason ?? ''} ${((res.sources ?? []) as Sources).map(sourceLabel).join(' ')}`
      // a follow-up's miss also tells what its first turn was answered from (the conversation's lesson)
      const miss = (part: string, d: Dialogue, t: Turn, res: Record<string, unknown>, after?: Record<string, unknown>) =>
        misses.push(
          `hybrid dialogue ${part} ${d.id} [${d.language}] ${t.question} → ${answered(res)} (want ${
            [`${t.lesson}:${t.page}`, ...(t.also ?? [])].join(' or ')
          })${after ? `; after ${answered(after)}` : ''}`,
        )
      for (const d of dialogues) {
        const first = await ask(d.first.question)
        if (score(dialogueTallies.get('first')!, first, rightOf(d.first)) !== 1 && args.has('--misses')) miss('first', d, d.first, first)
        const conversationId = first.conversation_id
        if (typeof conversationId === 'string' && conversationId) {
          const second = await ask(d.second.question, conversationId)
          if (second.reason === 'subject_from_conversation') inherited++
          const rank = score(dialogueTallies.get('conversation')!, second, rightOf(d.second))
          if (rank !== 1 && args.has('--misses')) miss('conversation', d, d.second, second, first)
        } else noConversation++
        const alone = await ask(d.second.question)
        if (score(dialogueTallies.get('alone')!, alone, rightOf(d.second)) !== 1 && args.has('--misses')) miss('alone', d, d.second, alone)
      }
      // a service without conversations: the conversation row is missing (and --check fails on its floors)
      if (noConversation > 0) {
        process.stderr.write(
          `retrieval evaluation: ${noConversation} of ${dialogues.length} first turns gave no conversation_id; their follow-ups were not asked in a conversation\n`,
        )
      }
      for (const [part, t] of dialogueTallies) tallies.set(`dialogues/hybrid/${part}`, t)
    }
    const dialoguesSeconds = (Date.now() - dialoguesStarted) / 1000

    const run: Run = { questions, dialogues, docOf, modes, tallies, clarifyItems, dialogueTallies, inherited, misses, evidence, started, dialoguesSeconds }
    const figures = figuresOf(run)
    if (args.has('--json')) out(JSON.stringify(figures, null, 2))
    else printReport(run)
    if (args.has('--check')) await checkFloors(root, figures)
  } finally {
    for (const g of Object.values(gateways)) await g?.close(1000)
    await sql.end({ timeout: 1 })
    await embedded.close()
    if (!process.env.EVAL_DATA_DIR) await rm(dataDir, { recursive: true, force: true })
  }
}

await main()
