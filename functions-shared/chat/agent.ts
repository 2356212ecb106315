// The teacher agent (spec §1, chat turn): one function per step, in order —
//   decide_path → check_wallet → retrieve_and_rerank → generate (or ask_clarifying) → finalize.
// decide_path and check_wallet run before any answer starts, so what they refuse becomes an HTTP status
// (404, 429, 402, 503). From then on the turn reports through a sink (SSE events or one JSON body) and
// always settles its reservation: the answer's cost, the flat clarifying cost, or nothing when the turn
// failed before it produced text. decide_path is in decide.ts, check_wallet and finalize in settle.ts,
// retrieve_and_rerank and generate in answer.ts, the shapes every step shares in turn.ts; the turn's order is here.
import { CircuitOpenError } from '../lib/circuit-breaker.ts'
import { DomainError, refusalCode } from '../domain/errors.ts'
import { refusedByModel } from '../ai/provider.ts'
import { clarifyingQuestion, noSourcesAnswer } from './prompt.ts'
import { catalogueOptions } from './infer.ts'
import type { RetrievalResult } from './rerank.ts'
import { decidePath } from './decide.ts'
import type { RecordedStart } from './turn-writes.ts'
import { excerpts } from './excerpt.ts'
import { generate, type Generated, retrieveStep } from './answer.ts'
import { actualFor, checkWallet, finalizeTurn, refuseBeforeReading, SettlementError } from './settle.ts'
import {
  type ChatInput,
  codePoints,
  type Decision,
  type Hold,
  type Outcome,
  REFUSED_MESSAGE,
  type Source,
  type TurnContext,
  type TurnSink,
  UNAVAILABLE_MESSAGE,
  type Usage,
} from './turn.ts'

function toSources(result: RetrievalResult, message: string): Source[] {
  // the excerpt is chosen with every form of the question the search used
  const excerpt = excerpts([message, result.query, result.cross_lingual.query ?? ''])
  return result.snippets.map((s, i) => ({
    n: i + 1,
    document_id: s.file_id,
    title: s.title,
    page_number: s.page_number,
    chunk_id: s.chunk_id,
    source_url: s.source_url ? `${s.source_url.split('#')[0]}#page=${s.page_number}` : null,
    score: Math.round((1 - s.distance) * 10_000) / 10_000,
    excerpt: excerpt(s.text),
  }))
}

/**
 * What a turn charged nothing says of its retrieval: the question's translations are the provider's
 * output, and a turn that found nothing, or whose client left, hands none out, in its answer or in the
 * usage row its student reads (/rest/v1 usage_log): a question sent with a grade that has no lesson (or
 * dropped at once) was a free translation of up to 2,000 characters, as often as the rate limit allowed.
 */
function uncharged(info: Record<string, unknown> & { cross_lingual: RetrievalResult['cross_lingual'] }, message: string) {
  return { ...info, query: message, cross_lingual: { ...info.cross_lingual, query: null } }
}

/** A turn whose reservation could not be settled: its answer is not delivered (nothing is charged). */

/** Decide the turn and hold its tokens; `record`: the turn's record, begun in the statement that holds them. */
export async function prepareTurn(
  ctx: TurnContext,
  input: ChatInput,
  record?: (decision: Decision) => RecordedStart,
): Promise<{ decision: Decision; hold: Hold }> {
  let decision: Decision
  let read: Awaited<ReturnType<typeof refuseBeforeReading>> | undefined
  try {
    // only a question whose subject is to be found makes the provider and the database work before
    // check_wallet; for one that names its subject or textbook, begin_chat_turn's refusals come first anyway
    if (!input.subject && !input.textbook_id) read = await refuseBeforeReading(ctx)
  } catch (err) {
    ctx.rt.metrics.turns.inc({ path: 'undecided', outcome: refusalCode(err) ?? 'failed' })
    throw err
  }
  try {
    decision = await decidePath(ctx, input, read)
  } catch (err) {
    // the subject inference embeds (and may translate) the question: a provider that fails there is the
    // same 503 as later in the turn, before anything is reserved
    if (err instanceof CircuitOpenError || (err as { name?: string }).name === 'ProviderError') {
      ctx.log.error(
        { step: 'decide_path', err: { name: (err as Error).name, message: (err as Error).message } },
        'the provider failed before the turn was decided',
      )
      ctx.rt.metrics.turns.inc({ path: 'undecided', outcome: 'model_unavailable' })
      throw new DomainError('service_unavailable', UNAVAILABLE_MESSAGE, { reason: 'provider_error', step: 'decide_path' })
    }
    throw err
  }
  try {
    const hold = await checkWallet(ctx, decision, record?.(decision))
    return { decision, hold }
  } catch (err) {
    const outcome = refusalCode(err) ?? 'failed'
    ctx.rt.metrics.turns.inc({ path: decision.path, outcome })
    throw err
  }
}

/** The turn's first event: how it was decided and what is held for it. */
export function turnMeta(ctx: TurnContext, { decision, hold }: { decision: Decision; hold: Hold }): Record<string, unknown> {
  return { ...decisionMeta(ctx, decision), tier: hold.tier, hint_level: hold.hintLevel, reservation: hold.reservation }
}

/** The turn's meta before its tokens are held (public.begin_recorded_chat_turn adds what is held, as turnMeta does). */
export function decisionMeta(ctx: TurnContext, decision: Decision): Record<string, unknown> {
  return {
    request_id: ctx.requestId,
    path: decision.path,
    reason: decision.reason,
    language: decision.language,
    subject: decision.subject,
    grade: decision.grade,
  }
}

/**
 * The rest of the turn; never throws: failures go to the sink and release the reservation. The client's
 * leaving does not stop it (the answer is stored and billed, and read later); `signal` is the turn's
 * cancel (POST /chat/turns/{id}/cancel), which bills the characters generated until then.
 */
export async function completeTurn(
  ctx: TurnContext,
  input: ChatInput,
  prepared: { decision: Decision; hold: Hold },
  sink: TurnSink,
  signal: AbortSignal,
): Promise<Outcome> {
  const { decision, hold } = prepared
  const m = ctx.rt.metrics
  sink.meta(turnMeta(ctx, prepared))
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
      const done = { outcome, model: null, extractive: false, timings: ctx.timings }
      // settled and ended in one statement when the sink writes the turn to the database
      const end = (await sink.closing?.({ ...done, usage: null })) ?? undefined
      usage = await finalizeTurn(ctx, decision, hold, {
        actual: ctx.deps.config.BILLING_CLARIFY_COST,
        kind: 'clarify',
        characters: codePoints(question),
        model: null,
        outcome,
      }, end)
      if (!usage) throw new SettlementError('the clarifying answer could not be settled')
      sink.done({ ...done, usage }, end?.written)
      return outcome
    }

    // a textbook is searched whatever document_language says (it is in its own language)
    retrieval = await retrieveStep(
      ctx,
      decision,
      hold,
      decision.searchText ?? input.message,
      decision.fileId ? null : (input.document_language ?? null),
      input.message,
    )
    const retrievalInfo = {
      query: retrieval.query,
      translated: retrieval.translated,
      translation_failed: retrieval.translation_failed,
      cross_lingual: retrieval.cross_lingual,
      candidates: retrieval.candidates,
      rerank: retrieval.rerank,
    }
    // the sources go out with the answer's first text, not before it: a turn that ends before any text
    // (the client left, the model failed) is charged nothing, so it hands out none of the curriculum's
    // excerpts either
    let sources: Parameters<TurnSink['sources']>[0] | null = { sources: toSources(retrieval, input.message), retrieval: retrievalInfo }
    const delta = (text: string) => {
      if (sources) sink.sources(sources)
      sources = null
      sink.delta(text)
    }
    if (signal.aborted) {
      outcome = 'cancelled'
    } else if (retrieval.snippets.length === 0) {
      sources = { sources: [], retrieval: uncharged(retrievalInfo, input.message) }
      delta(noSourcesAnswer(decision.language))
      outcome = 'no_sources'
    } else {
      generated = await generate(ctx, decision, hold, input, retrieval.snippets, signal, delta)
      outcome = generated.aborted ? 'cancelled' : 'answered'
    }
    // billed: the characters generated, whether the client stayed or left (the answer is stored, and it
    // reads it later), and until its cancel; nothing without text
    const characters = generated?.characters ?? 0
    const billed = characters > 0
    if (sources) sink.sources({ sources: [], retrieval: billed ? retrievalInfo : uncharged(retrievalInfo, input.message) })
    const done = { outcome, model: generated?.model ?? null, extractive: generated?.extractive ?? false, timings: ctx.timings }
    // settled and ended in one statement when the sink writes the turn to the database
    const end = (await sink.closing?.({ ...done, usage: null })) ?? undefined
    usage = await finalizeTurn(ctx, decision, hold, {
      actual: billed ? actualFor(ctx.deps, characters) : 0,
      kind: billed ? 'chat' : 'released',
      characters,
      model: generated?.model ?? null,
      outcome,
      // the chunk ids name the pages that answer (sha256 of document, page and index, both public): a turn
      // charged nothing (cancelled before any text) names none in the usage row its student reads, as it
      // hands out no source in its answer
      extra: {
        retrieval: billed ? retrievalInfo : uncharged(retrievalInfo, input.message),
        sources: billed ? retrieval.snippets.map((s) => s.chunk_id) : [],
        extractive: generated?.extractive ?? false,
        ...(generated?.cut ? { cut_at_deadline: true } : {}),
      },
    }, end)
    // an answer is delivered settled or not at all (JSON: no answer; SSE: an error event, not done)
    if (billed && !usage) throw new SettlementError('the answer could not be settled')
    if (billed) m.characters.inc(characters)
    sink.done({ ...done, usage }, end?.written)
    return outcome
  } catch (err) {
    const unsettled = err instanceof SettlementError
    const refused = !unsettled && refusedByModel(err)
    const unavailable = unsettled || err instanceof CircuitOpenError || (err as { name?: string }).name === 'ProviderError'
    outcome = unsettled ? 'unsettled' : refused ? 'model_refused' : unavailable ? 'model_unavailable' : 'failed'
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
        ? {
          error: 'service_unavailable',
          message: 'The answer could not be settled, so it is not delivered; nothing was charged, please retry',
          request_id: ctx.requestId,
        }
        : refused
        ? { error: 'bad_request', message: REFUSED_MESSAGE, request_id: ctx.requestId }
        : unavailable
        ? { error: 'service_unavailable', message: UNAVAILABLE_MESSAGE, request_id: ctx.requestId }
        : { error: 'internal_error', message: 'The answer failed; nothing was charged', request_id: ctx.requestId },
    )
    return outcome
  } finally {
    m.turns.inc({ path: decision.path, outcome })
  }
}
