// The shapes of a chat turn, shared by its steps (decide.ts, settle.ts, agent.ts): the request, the
// context every step gets, what each step decides, and the sink a turn reports through.
import type { DomainErrorCode } from '../domain/errors.ts'
import type { Deps } from '../deps.ts'
import type { Logger } from '../lib/logger.ts'
import type { Tier } from '../config.ts'
import type { ChatLanguage } from './language.ts'
import type { HintLevel } from './prompt.ts'
import type { PreparedQuery } from './query.ts'
import type { TurnUsage } from '../wallet/reservations.ts'
import type { RetrievalCaches } from './retrieve.ts'
import type { CircuitBreaker } from '../lib/circuit-breaker.ts'
import type { ChatMetrics } from '../lib/metrics.ts'

/** What a turn uses of the process's chat runtime (runtime.ts): the caches, the model's breaker, the series. */
export interface TurnRuntime {
  caches: RetrievalCaches
  breaker: CircuitBreaker
  metrics: ChatMetrics
}

export const UNAVAILABLE_MESSAGE = 'Service temporarily unavailable, please retry'
/** What a student reads when the model refused the message for what it holds: retrying the same will not help. */
export const REFUSED_MESSAGE = 'The model could not take this message (too long with its history, or refused): shorten or rephrase it; nothing was charged'

export interface ChatInput {
  message: string
  language?: ChatLanguage | undefined
  grade?: string | undefined
  subject?: string | undefined
  textbook_id?: string | undefined
  document_language?: 'fr' | 'ar' | undefined
  history?: { role: 'user' | 'assistant'; content: string }[] | undefined
  /** the conversation the turn belongs to (its lesson; its history is `history`, bounded by the tier's budget) */
  conversation?: { id: string; grade: string | null; subject: string | null } | undefined
}

export interface TurnContext {
  deps: Deps
  rt: TurnRuntime
  requestId: string
  userId: string
  /** the turn's id (chat_turns, chat_messages), named in its usage row */
  turnId?: string | undefined
  /** the client as the per-IP limits count it: a first turn's wallet takes its welcome bonus from its allowance */
  clientKey?: string | undefined
  log: Logger
  /** ms per step (and per retrieval part) */
  timings: Record<string, number>
}

export interface Decision {
  path: 'answer' | 'clarify'
  reason: 'subject_given' | 'textbook_given' | 'subject_inferred_from_catalogue' | 'subject_from_conversation' | 'small_talk' | 'no_match' | 'subjects_tied'
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
  /** what retrieval searches when it is not the question alone (a follow-up: with the question it follows) */
  searchText?: string
}

export interface Hold {
  tier: Tier
  hintLevel: HintLevel
  estimated: number
  maxChars: number
  reservation: { id: string; estimated: number; expires_at: string }
  /** when the reservation was asked for (the service's clock): its TTL runs from no earlier than this */
  reservedAt?: number
  /** the conversation whose turn began in the same statement (public.begin_recorded_chat_turn) */
  conversationId?: string
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

export type Outcome = 'answered' | 'clarified' | 'no_sources' | 'cancelled' | 'model_refused' | 'model_unavailable' | 'unsettled' | 'failed'

/** Where a turn's output goes: SSE events, or one JSON body. */
/** A terminal event as a turn stores it (turn-state.ts, Terminal) */
type StoredTerminal = { event: 'done' | 'error'; data: Record<string, unknown> }

/**
 * The turn's end, written in the statement that settles it (the sink's closing): `written` is the
 * terminal event as stored, set when the settlement wrote it; unset, the sink writes the end itself.
 */
export type SettledEnd = NonNullable<TurnUsage['end']> & { written?: StoredTerminal }

export interface TurnSink {
  meta(data: Record<string, unknown>): void
  sources(data: { sources: Source[]; retrieval: Record<string, unknown> | null }): void
  delta(text: string): void
  /**
   * The turn's end for the statement that settles it, once the text sent so far is written (the done
   * event's data without its usage); null when the sink writes the end itself.
   */
  closing?(data: Record<string, unknown>): Promise<SettledEnd | null>
  /** `written`: the terminal event the settlement wrote (closing), which the sink then keeps as is */
  done(data: Record<string, unknown>, written?: StoredTerminal): void
  error(data: { error: DomainErrorCode; message: string; request_id: string }): void
}

export async function timed<T>(ctx: TurnContext, stage: string, fn: () => Promise<T>): Promise<T> {
  const start = performance.now()
  try {
    return await fn()
  } finally {
    const ms = performance.now() - start
    ctx.timings[stage] = Math.round(ms * 100) / 100
    ctx.rt.metrics.stage.observe({ stage }, ms / 1000)
  }
}

export const codePoints = (text: string) => {
  let n = 0
  for (const _ of text) n++
  return n
}
