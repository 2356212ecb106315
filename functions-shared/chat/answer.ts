// Steps 3 and 4 of a chat turn, retrieve_and_rerank and generate: the pages that answer the question, and
// the answer streamed from them within the reservation's time (see agent.ts for the order).
import { tierLimits } from '../config.ts'
import { buildMessages } from './prompt.ts'
import { type RetrievalResult, retrieveAndRerank } from './rerank.ts'
import { withinBudget } from './conversation.ts'
import { type ChatInput, codePoints, type Decision, type Hold, timed, type TurnContext } from './turn.ts'

/** Step 3. French query, dense top-K with prefilters, chunk text, rerank to the tier's N. */
export async function retrieveStep(
  ctx: TurnContext,
  decision: Decision,
  hold: Hold,
  message: string,
  documentLanguage: string | null,
  rerankMessage?: string,
): Promise<RetrievalResult> {
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
        ...(decision.searchText && rerankMessage ? { rerankMessage } : {}),
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
      {
        step: 'retrieve_and_rerank',
        query: result.query,
        translated: result.translated,
        translation_failed: result.translation_failed,
        cross_lingual: result.cross_lingual.status,
        candidates: result.candidates,
        snippets: result.snippets.length,
        rerank: result.rerank,
      },
      'retrieve_and_rerank',
    )
    return result
  })
}

export interface Generated {
  characters: number
  model: string | null
  extractive: boolean
  aborted: boolean
  /** stopped before the reservation's expiry (generationDeadline) */
  cut: boolean
}

/**
 * How long an answer may still be generated: until a tenth of the reservation's TTL (at most 30 s)
 * before it expires. A streamed answer has no limit of its own (only each piece has OPENAI_TIMEOUT_MS),
 * and one that outlived its reservation was refunded by the expiry and could not be settled: in SSE its
 * text had gone out, so a long answer of a slow model was free. Cut there, it is settled for what it has.
 */
export function generationDeadline(ctx: TurnContext, hold: Hold): number | null {
  if (hold.reservedAt === undefined) return null
  const ttlMs = ctx.deps.config.RESERVATION_TTL_SECONDS * 1000
  return Math.max(0, hold.reservedAt + ttlMs - Math.min(30_000, ttlMs / 10) - ctx.deps.clock.now())
}

/** Step 4. The answer, streamed through the breaker; a client that leaves stops it (not a model failure). */
export async function generate(
  ctx: TurnContext,
  decision: Decision,
  hold: Hold,
  input: ChatInput,
  snippets: RetrievalResult['snippets'],
  signal: AbortSignal,
  onDelta: (text: string) => void,
): Promise<Generated> {
  return timed(ctx, 'generate', async () => {
    const { deps } = ctx
    const out: Generated = { characters: 0, model: null, extractive: false, aborted: false, cut: false }
    const controller = new AbortController()
    const stop = () => controller.abort()
    signal.addEventListener('abort', stop)
    if (signal.aborted) controller.abort()
    const deadline = generationDeadline(ctx, hold)
    const cancelDeadline = deadline === null ? () => {} : deps.clock.setTimer(deadline, () => {
      if (controller.signal.aborted) return
      out.cut = true
      controller.abort()
    })
    try {
      const messages = buildMessages({
        message: input.message,
        language: decision.language,
        hintLevel: hold.hintLevel,
        history: input.conversation ? withinBudget(input.history ?? [], hold.maxChars) : input.history ?? [],
        maxChars: hold.maxChars,
        subject: decision.subject,
        grade: decision.grade,
      })
      const result = await ctx.rt.breaker.run(async () => {
        try {
          return await deps.ai.chat(
            {
              messages,
              snippets: snippets.map((s, i) => ({ n: i + 1, text: s.text, title: s.title, page_number: s.page_number })),
              language: decision.language,
              maxTokens: tierLimits(deps.config, hold.tier).maxTokens,
              signal: controller.signal,
            },
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
      out.aborted = signal.aborted
      if (result) {
        out.model = result.model
        out.extractive = result.extractive
      }
      ctx.log.info({
        step: 'generate',
        characters: out.characters,
        model: out.model,
        extractive: out.extractive,
        aborted: out.aborted,
        cut_at_deadline: out.cut,
      }, 'generate')
      return out
    } finally {
      cancelDeadline()
      signal.removeEventListener('abort', stop)
    }
  })
}
