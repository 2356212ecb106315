// The teacher agent (spec §1, chat turn): one function per step, in order —
//   decide_path → check_wallet → retrieve_and_rerank → generate (or ask_clarifying) → finalize.
// decide_path and check_wallet run before any answer starts, so what they refuse becomes an HTTP status
// (404, 429, 402, 503). From then on the turn reports through a sink (SSE events or one JSON body) and
// always settles its reservation: the answer's cost, the flat clarifying cost, or nothing when the turn
// failed before it produced text.
import type { Deps } from '../deps.ts'
import type { Logger } from '../lib/logger.ts'
import { tierLimits, type Tier } from '../config.ts'
import { ApiError, ErrorCode } from '../http/errors.ts'
import { asService } from '../db/tx.ts'
import { CircuitOpenError } from '../lib/circuit-breaker.ts'
import { finalize } from '../wallet/service.ts'
import { countReservation } from '../wallet/metrics.ts'
import { iso } from '../lib/time.ts'
import { storable, storableText } from '../lib/text.ts'
import { detectLanguage, type ChatLanguage } from './language.ts'
import { buildMessages, clarifyingQuestion, noSourcesAnswer, type HintLevel } from './prompt.ts'
import { catalogueOptions, inferFromCatalogue } from './infer.ts'
import { isSmallTalk } from './small-talk.ts'
import { prepareQuery, translationUseful, type PreparedQuery, type QuestionLanguage } from './query.ts'
import { retrieveAndRerank, type RetrievalResult } from './rerank.ts'
import type { ChatRuntime } from './runtime.ts'

export const UNAVAILABLE_MESSAGE = 'Service temporarily unavailable, please retry'

export interface ChatInput {
  message: string
  language?: ChatLanguage | undefined
  grade?: string | undefined
  subject?: string | undefined
  textbook_id?: string | undefined
  document_language?: 'fr' | 'ar' | undefined
  history?: { role: 'user' | 'assistant'; content: string }[] | undefined
}

export interface TurnContext {
  deps: Deps
  rt: ChatRuntime
  requestId: string
  userId: string
  log: Logger
  /** ms per step (and per retrieval part) */
  timings: Record<string, number>
}

export interface Decision {
  path: 'answer' | 'clarify'
  reason: 'subject_given' | 'textbook_given' | 'subject_inferred_from_catalogue' | 'small_talk' | 'no_match' | 'subjects_tied'
  language: ChatLanguage
  subject: string | null
  /** the subject was found in the catalogue: retrieval may drop it when it finds nothing */
  subjectInferred: boolean
  /** the grade given (or the textbook's); with an inferred subject, the grade of its best hits is only reported */
  grade: string | null
  inferredGrade?: string | null
  fileId: string | null
  /** the subjects a clarifying question offers first (a tie) */
  tiedSubjects?: string[]
  /** how the catalogue decided (usage details) */
  inference?: Record<string, unknown>
  /** the question as the inference searched it, for the retrieval to search again */
  prepared?: PreparedQuery
}

export interface Hold {
  tier: Tier
  hintLevel: HintLevel
  estimated: number
  maxChars: number
  reservation: { id: string; estimated: number; expires_at: string }
}

export interface Source {
  n: number
  document_id: string
  title: string | null
  page_number: number
  chunk_id: string
  source_url: string | null
  score: number
  excerpt: string
}

export interface Usage {
  estimated: number
  actual: number
  charged: number
  refunded: number
  uncovered: number
  characters: number
  token_balance: number
}

export type Outcome = 'answered' | 'clarified' | 'no_sources' | 'disconnected' | 'model_unavailable' | 'unsettled' | 'failed'

/** Where a turn's output goes: SSE events, or one JSON body. */
export interface TurnSink {
  meta(data: Record<string, unknown>): void
  sources(data: { sources: Source[]; retrieval: Record<string, unknown> | null }): void
  delta(text: string): void
  done(data: Record<string, unknown>): void
  error(data: { error: string; message: string; request_id: string }): void
}

async function timed<T>(ctx: TurnContext, stage: string, fn: () => Promise<T>): Promise<T> {
  const start = performance.now()
  try {
    return await fn()
  } finally {
    const ms = performance.now() - start
    ctx.timings[stage] = Math.round(ms * 100) / 100
    ctx.rt.metrics.stage.observe({ stage }, ms / 1000)
  }
}

const codePoints = (text: string) => {
  let n = 0
  for (const _ of text) n++
  return n
}

/**
 * Step 1. Answer, or ask. A subject given, or implied by a textbook, is used as is; otherwise the
 * catalogue decides (infer.ts): the subject its best hits agree on, or a clarifying question when the
 * message is small talk (small-talk.ts, before any search), nothing matches, or two subjects are tied.
 */
export async function decidePath(ctx: TurnContext, input: ChatInput): Promise<Decision> {
  return timed(ctx, 'decide_path', async () => {
    const language = input.language ?? detectLanguage(input.message)
    let subject = input.subject ?? null
    let grade = input.grade ?? null
    let reason: Decision['reason'] = 'subject_given'
    let inferred = false
    let inferredGrade: string | null = null
    let tiedSubjects: string[] | undefined
    let inference: Record<string, unknown> | undefined
    let prepared: PreparedQuery | undefined
    if (input.textbook_id) {
      const [doc] = await asService(ctx.deps.sql, (tx) => tx`select id, grade, subject, status from public.documents where id = ${input.textbook_id!}`)
      if (!doc || doc.status !== 'ready') throw new ApiError(ErrorCode.NOT_FOUND, `Textbook ${input.textbook_id} is unknown or not ready`)
      subject ??= (doc.subject as string | null) ?? null
      grade ??= (doc.grade as string | null) ?? null
      reason = 'textbook_given'
    } else if (!subject && isSmallTalk(input.message)) {
      reason = 'small_talk'
    } else if (!subject) {
      // prepared once: the retrieval searches the same forms with the same vectors
      prepared = await prepareQuery(ctx.deps, input.message, language, { translate: translationUseful(language, input.document_language) })
      const found = await findInCatalogue(ctx, input, prepared, language)
      inference = { kind: found.kind, ...found.evidence }
      if (found.kind === 'match') {
        subject = found.subject
        inferredGrade = found.grade
        inferred = true
        reason = 'subject_inferred_from_catalogue'
      } else {
        reason = found.kind === 'tied' ? 'subjects_tied' : 'no_match'
        tiedSubjects = found.subjects
      }
    }
    const decision: Decision = {
      path: reason === 'small_talk' || reason === 'no_match' || reason === 'subjects_tied' ? 'clarify' : 'answer',
      reason,
      language,
      subject,
      subjectInferred: inferred,
      grade,
      inferredGrade,
      fileId: input.textbook_id ?? null,
      ...(tiedSubjects ? { tiedSubjects } : {}),
      ...(inference ? { inference } : {}),
      ...(prepared ? { prepared } : {}),
    }
    ctx.log.info({ step: 'decide_path', path: decision.path, reason, language, subject, grade, inferred_grade: inferredGrade, inference }, 'decide_path')
    return decision
  })
}

/** The question (and, when it alone says too little, with the student's last messages) in the catalogue. */
async function findInCatalogue(ctx: TurnContext, input: ChatInput, prepared: PreparedQuery, language: QuestionLanguage) {
  const { deps } = ctx
  const attempt = (query: PreparedQuery) => inferFromCatalogue(deps, { query, grade: input.grade ?? null, language: input.document_language ?? null })
  const found = await attempt(prepared)
  const recent = (input.history ?? []).filter((h) => h.role === 'user').slice(-2).map((h) => h.content)
  if (found.kind === 'match' || recent.length === 0) return found
  // a follow-up ("and the second one?") takes its subject from what came before (not translated again)
  const withHistory = await attempt(await prepareQuery(deps, [...recent, input.message].join('\n'), language, { translate: false }))
  return withHistory.kind === 'match' ? withHistory : found
}

function untilUtcMidnight(now: number): number {
  const d = new Date(now)
  return Math.max(1, Math.ceil((Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate() + 1) - now) / 1000))
}

/** The estimate: the flat clarifying cost, or base + 1 per 200 characters of the longest answer the tier allows. */
export function estimateFor(deps: Deps, path: Decision['path'], tier: Tier): { estimated: number; maxChars: number } {
  const { config } = deps
  const maxChars = tierLimits(config, tier).maxTokens * config.CHAT_CHARS_PER_MODEL_TOKEN
  if (path === 'clarify') return { estimated: config.BILLING_CLARIFY_COST, maxChars }
  return { estimated: config.BILLING_BASE_COST + Math.ceil(maxChars / config.BILLING_CHARS_PER_TOKEN), maxChars }
}

/** The actual cost of an answer of `characters` characters (before the cap of finalize). */
export function actualFor(deps: Deps, characters: number): number {
  return deps.config.BILLING_BASE_COST + Math.ceil(characters / deps.config.BILLING_CHARS_PER_TOKEN)
}

/**
 * Step 2. Refuses what cannot be served — the chat model's circuit open (503), the tier's daily limit
 * (429) — then reserves the estimate (402 when the balance is short: nothing reserved).
 */
export async function checkWallet(ctx: TurnContext, decision: Decision): Promise<Hold> {
  return timed(ctx, 'check_wallet', async () => {
    const { deps } = ctx
    if (decision.path === 'answer' && ctx.rt.breaker.state === 'open') {
      throw new ApiError(ErrorCode.SERVICE_UNAVAILABLE, UNAVAILABLE_MESSAGE, { details: { reason: 'circuit_open' }, headers: { 'Retry-After': String(deps.config.CIRCUIT_RESET_SECONDS) } })
    }
    const tiers = ['free', 'standard', 'premium'] as const
    const estimates = tiers.map((t) => estimateFor(deps, decision.path, t).estimated)
    const daily = tiers.map((t) => tierLimits(deps.config, t).dailyLimit ?? 0)
    const [row] = await deps.sql`
      select * from public.begin_chat_turn(${ctx.userId}, ${ctx.requestId}, ${estimates}::int[], ${daily}::int[],
                                           ${deps.config.RESERVATION_TTL_SECONDS}, ${deps.config.WELCOME_BONUS_TOKENS})`
    const tier = row!.tier as Tier
    const turns = Number(row!.turns)
    const { estimated, maxChars } = estimateFor(deps, decision.path, tier)
    if (row!.refused === 'daily_limit') {
      const limit = tierLimits(deps.config, tier).dailyLimit
      const retryAfter = untilUtcMidnight(deps.clock.now())
      throw new ApiError(ErrorCode.DAILY_LIMIT_REACHED, `The ${tier} tier allows ${limit} chat turns per day`, {
        details: { limit, window: '1d', retry_after: retryAfter },
        headers: { 'Retry-After': String(retryAfter) },
      })
    }
    if (row!.refused === 'insufficient_balance') {
      countReservation(deps.metrics.registry, 'insufficient')
      throw new ApiError(ErrorCode.INSUFFICIENT_BALANCE, `This answer needs ${estimated} tokens reserved; the balance is ${Number(row!.token_balance)}`, {
        details: { estimated, token_balance: Number(row!.token_balance) },
      })
    }
    countReservation(deps.metrics.registry, 'reserved', estimated)
    const reservation = { id: row!.reservation_id as string, estimated: Number(row!.estimated), expires_at: iso(row!.expires_at)! }
    const hold: Hold = { tier, hintLevel: Number(row!.hint_level) as HintLevel, estimated, maxChars, reservation }
    ctx.log.info({ step: 'check_wallet', tier, estimated, reservation_id: reservation.id, turns_today: turns }, 'check_wallet')
    return hold
  })
}

function toSources(result: RetrievalResult): Source[] {
  return result.snippets.map((s, i) => ({
    n: i + 1,
    document_id: s.file_id,
    title: s.title,
    page_number: s.page_number,
    chunk_id: s.chunk_id,
    source_url: s.source_url ? `${s.source_url.split('#')[0]}#page=${s.page_number}` : null,
    score: Math.round((1 - s.distance) * 10_000) / 10_000,
    excerpt: s.text.length > 280 ? `${s.text.slice(0, 279)}…` : s.text,
  }))
}

/** Step 3. French query, dense top-K with prefilters, chunk text, rerank to the tier's N. */
export async function retrieveStep(ctx: TurnContext, decision: Decision, hold: Hold, message: string, documentLanguage: string | null): Promise<RetrievalResult> {
  return timed(ctx, 'retrieve_and_rerank', async () => {
    const parts: Record<string, number> = {}
    const result = await retrieveAndRerank(
      ctx.deps,
      {
        message,
        language: decision.language,
        tier: hold.tier,
        filters: { grade: decision.grade, subject: decision.subject, language: documentLanguage, fileId: decision.fileId },
        relaxSubject: decision.subjectInferred,
        ...(decision.prepared ? { prepared: decision.prepared } : {}),
        timings: parts,
      },
      ctx.rt.caches,
    )
    for (const [k, v] of Object.entries(parts)) ctx.timings[`retrieve.${k}`] = v
    const m = ctx.rt.metrics
    m.rerank.inc({ mode: result.rerank })
    if (decision.language !== 'fr') m.translations.inc({ outcome: result.translation_failed ? 'failed' : result.translated ? 'translated' : 'unchanged' })
    ctx.log.info(
      { step: 'retrieve_and_rerank', query: result.query, translated: result.translated, translation_failed: result.translation_failed, cross_lingual: result.cross_lingual.status, candidates: result.candidates, snippets: result.snippets.length, rerank: result.rerank },
      'retrieve_and_rerank',
    )
    return result
  })
}

interface Generated {
  characters: number
  model: string | null
  extractive: boolean
  aborted: boolean
}

/** Step 4. The answer, streamed through the breaker; a client that leaves stops it (not a model failure). */
export async function generate(ctx: TurnContext, decision: Decision, hold: Hold, input: ChatInput, snippets: RetrievalResult['snippets'], signal: AbortSignal, onDelta: (text: string) => void): Promise<Generated> {
  return timed(ctx, 'generate', async () => {
    const { deps } = ctx
    const out: Generated = { characters: 0, model: null, extractive: false, aborted: false }
    const controller = new AbortController()
    const stop = () => controller.abort()
    signal.addEventListener('abort', stop)
    if (signal.aborted) controller.abort()
    try {
      const messages = buildMessages({ message: input.message, language: decision.language, hintLevel: hold.hintLevel, history: input.history ?? [], maxChars: hold.maxChars, subject: decision.subject, grade: decision.grade })
      const result = await ctx.rt.breaker.run(async () => {
        try {
          return await deps.ai.chat(
            { messages, snippets: snippets.map((s, i) => ({ n: i + 1, text: s.text, title: s.title, page_number: s.page_number })), language: decision.language, maxTokens: tierLimits(deps.config, hold.tier).maxTokens, signal: controller.signal },
            (text) => {
              if (controller.signal.aborted) return
              out.characters += codePoints(text)
              onDelta(text)
            },
          )
        } catch (err) {
          if (controller.signal.aborted) return null // the client left: not the model's failure
          throw err
        }
      })
      out.aborted = controller.signal.aborted
      if (result) {
        out.model = result.model
        out.extractive = result.extractive
      }
      ctx.log.info({ step: 'generate', characters: out.characters, model: out.model, extractive: out.extractive, aborted: out.aborted }, 'generate')
      return out
    } finally {
      signal.removeEventListener('abort', stop)
    }
  })
}

/** A turn whose reservation could not be settled: its answer is not delivered (nothing is charged). */
export class SettlementError extends Error {
  override name = 'SettlementError'
}

/**
 * Step 5. Settles the reservation (actual 0 releases it) and writes the usage row. What the turn writes
 * is made storable first, so no text (the question, the model's output, an error message) can make the
 * settlement fail; if the write fails anyway, the money is settled again with only the charge's facts.
 * Null when the reservation cannot be settled (it outlived its TTL and the expiry refunded it, or the
 * database is out).
 */
export async function finalizeTurn(ctx: TurnContext, decision: Decision, hold: Hold, settle: { actual: number; kind: 'chat' | 'clarify' | 'released'; characters: number; model: string | null; outcome: Outcome; extra?: Record<string, unknown> }): Promise<Usage | null> {
  return timed(ctx, 'finalize', async () => {
    const attempt = (details: Record<string, unknown>, model: string | null) =>
      finalize({
        ctx: { deps: ctx.deps, requestId: ctx.requestId },
        input: { reservation_id: hold.reservation.id, actual: settle.actual, kind: settle.kind, request_id: ctx.requestId },
        usage: { characters: settle.characters, model: model === null ? null : storableText(model), details: storable(details) },
      })
    const details = {
      path: decision.path, reason: decision.reason, outcome: settle.outcome, language: decision.language, subject: decision.subject, grade: decision.grade,
      ...(decision.inference ? { inference: decision.inference, inferred_grade: decision.inferredGrade ?? null } : {}),
      tier: hold.tier, hint_level: hold.hintLevel, timings: ctx.timings, ...settle.extra,
    }
    let r: Awaited<ReturnType<typeof finalize>>
    try {
      r = await attempt(details, settle.model)
    } catch (err) {
      const conflict = err instanceof ApiError && err.code === ErrorCode.CONFLICT
      ctx.log.error({ step: 'finalize', err: { message: (err as Error).message }, reservation_id: hold.reservation.id }, 'finalize failed')
      // e.g. the turn outlived its reservation and the expiry job refunded it: nothing is charged
      if (conflict) return null
      try {
        r = await attempt({ path: decision.path, outcome: settle.outcome, tier: hold.tier, settle_retry: (err as Error).message }, null)
      } catch (again) {
        ctx.log.error({ step: 'finalize', err: { message: (again as Error).message }, reservation_id: hold.reservation.id }, 'finalize failed again')
        return null
      }
    }
    ctx.rt.metrics.tokensCharged.inc(r.charged)
    ctx.log.info({ step: 'finalize', actual: r.actual, charged: r.charged, refunded: r.refunded, uncovered: r.uncovered, kind: settle.kind, outcome: settle.outcome }, 'finalize')
    return { estimated: r.estimated, actual: r.actual, charged: r.charged, refunded: r.refunded, uncovered: r.uncovered, characters: settle.characters, token_balance: r.token_balance }
  })
}

/** decide_path and check_wallet: what they refuse is an HTTP error; nothing is reserved then. */
export async function prepareTurn(ctx: TurnContext, input: ChatInput): Promise<{ decision: Decision; hold: Hold }> {
  let decision: Decision
  try {
    decision = await decidePath(ctx, input)
  } catch (err) {
    // the subject inference embeds (and may translate) the question: a provider that fails there is the
    // same 503 as later in the turn, before anything is reserved
    if (err instanceof CircuitOpenError || (err as { name?: string }).name === 'ProviderError') {
      ctx.log.error({ step: 'decide_path', err: { name: (err as Error).name, message: (err as Error).message } }, 'the provider failed before the turn was decided')
      ctx.rt.metrics.turns.inc({ path: 'undecided', outcome: 'model_unavailable' })
      throw new ApiError(ErrorCode.SERVICE_UNAVAILABLE, UNAVAILABLE_MESSAGE, { details: { reason: 'provider_error', step: 'decide_path' } })
    }
    throw err
  }
  try {
    const hold = await checkWallet(ctx, decision)
    return { decision, hold }
  } catch (err) {
    const outcome = err instanceof ApiError ? err.code : 'failed'
    ctx.rt.metrics.turns.inc({ path: decision.path, outcome })
    throw err
  }
}

/** The rest of the turn; never throws: failures go to the sink and release the reservation. */
export async function completeTurn(ctx: TurnContext, input: ChatInput, prepared: { decision: Decision; hold: Hold }, sink: TurnSink, signal: AbortSignal): Promise<Outcome> {
  const { decision, hold } = prepared
  const m = ctx.rt.metrics
  sink.meta({
    request_id: ctx.requestId,
    path: decision.path,
    reason: decision.reason,
    language: decision.language,
    subject: decision.subject,
    grade: decision.grade,
    tier: hold.tier,
    hint_level: hold.hintLevel,
    reservation: hold.reservation,
  })
  let outcome: Outcome = 'failed'
  let retrieval: RetrievalResult | null = null
  let generated: Generated | null = null
  let usage: Usage | null = null
  try {
    if (decision.path === 'clarify') {
      const options = await catalogueOptions(ctx.deps)
      const question = clarifyingQuestion(decision.language, { ...options, tied: decision.tiedSubjects ?? [] })
      ctx.log.info({ step: 'ask_clarifying', reason: decision.reason }, 'ask_clarifying')
      sink.sources({ sources: [], retrieval: null })
      sink.delta(question)
      outcome = 'clarified'
      usage = await finalizeTurn(ctx, decision, hold, { actual: ctx.deps.config.BILLING_CLARIFY_COST, kind: 'clarify', characters: codePoints(question), model: null, outcome })
      if (!usage) throw new SettlementError('the clarifying answer could not be settled')
      sink.done({ outcome, usage, model: null, extractive: false, timings: ctx.timings })
      return outcome
    }

    retrieval = await retrieveStep(ctx, decision, hold, input.message, input.document_language ?? null)
    const retrievalInfo = { query: retrieval.query, translated: retrieval.translated, translation_failed: retrieval.translation_failed, cross_lingual: retrieval.cross_lingual, candidates: retrieval.candidates, rerank: retrieval.rerank }
    sink.sources({ sources: toSources(retrieval), retrieval: retrievalInfo })
    if (signal.aborted) {
      outcome = 'disconnected'
    } else if (retrieval.snippets.length === 0) {
      sink.delta(noSourcesAnswer(decision.language))
      outcome = 'no_sources'
    } else {
      generated = await generate(ctx, decision, hold, input, retrieval.snippets, signal, (text) => sink.delta(text))
      outcome = generated.aborted ? 'disconnected' : 'answered'
    }
    // billed: the characters generated (also when the client left mid-answer); nothing without text
    const characters = generated?.characters ?? 0
    const billed = characters > 0
    usage = await finalizeTurn(ctx, decision, hold, {
      actual: billed ? actualFor(ctx.deps, characters) : 0,
      kind: billed ? 'chat' : 'released',
      characters,
      model: generated?.model ?? null,
      outcome,
      extra: { retrieval: retrievalInfo, sources: retrieval.snippets.map((s) => s.chunk_id), extractive: generated?.extractive ?? false },
    })
    // an answer is delivered settled or not at all (JSON: no answer; SSE: an error event, not done)
    if (billed && !usage) throw new SettlementError('the answer could not be settled')
    if (billed) m.characters.inc(characters)
    sink.done({ outcome, usage, model: generated?.model ?? null, extractive: generated?.extractive ?? false, timings: ctx.timings })
    return outcome
  } catch (err) {
    const unsettled = err instanceof SettlementError
    const unavailable = unsettled || err instanceof CircuitOpenError || (err as { name?: string }).name === 'ProviderError'
    outcome = unsettled ? 'unsettled' : unavailable ? 'model_unavailable' : 'failed'
    ctx.log.error({ err: { name: (err as Error).name, message: (err as Error).message }, outcome }, 'chat turn failed')
    // nothing is charged for a turn that failed, whatever it produced before failing
    if (!usage) {
      usage = await finalizeTurn(ctx, decision, hold, {
        actual: 0,
        kind: 'released',
        characters: generated?.characters ?? 0,
        model: generated?.model ?? null,
        outcome,
        extra: { error: (err as Error).message },
      })
    }
    sink.error(
      unsettled
        ? { error: ErrorCode.SERVICE_UNAVAILABLE, message: 'The answer could not be settled, so it is not delivered; nothing was charged, please retry', request_id: ctx.requestId }
        : unavailable
        ? { error: ErrorCode.SERVICE_UNAVAILABLE, message: UNAVAILABLE_MESSAGE, request_id: ctx.requestId }
        : { error: ErrorCode.INTERNAL_ERROR, message: 'The answer failed; nothing was charged', request_id: ctx.requestId },
    )
    return outcome
  } finally {
    m.turns.inc({ path: decision.path, outcome })
  }
}
