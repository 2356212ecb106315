// A chat turn as its events rebuild it: the state any process can read of a turn (from the memory of the
// process that generates it, or from the database), the SSE events it sent after a Last-Event-ID, and its
// JSON. The turn is stored by turn-recorder.ts and read and followed by turn-store.ts.
import { TURN_STATUSES } from '../domain/enums.ts'
import type { Outcome } from './turn.ts'

export type TurnStatus = (typeof TURN_STATUSES)[number]

/** The status a turn ends in, from its outcome. */
export function statusOf(outcome: Outcome): Exclude<TurnStatus, 'streaming' | 'interrupted'> {
  switch (outcome) {
    case 'answered':
    case 'no_sources':
      return 'answered'
    case 'clarified':
      return 'clarified'
    case 'cancelled':
      return 'cancelled'
    default:
      return 'failed'
  }
}

export type Terminal = { event: 'done' | 'error'; data: Record<string, unknown> }

/** What a turn is at one moment: enough to rebuild every event it sent. */
export interface TurnState {
  turnId: string
  conversationId: string | null
  status: TurnStatus
  meta: Record<string, unknown>
  sourcesEvent: Record<string, unknown> | null
  /** the answer so far, as written */
  content: string
  terminal: Terminal | null
  usage: Record<string, unknown> | null
  /** the question, as sent */
  question: string | null
}

export interface TurnEvent {
  id: number
  event: string
  data: unknown
}

/**
 * The events of a turn after the one whose id is `lastId`, in order. Ids grow through a turn: meta is 1,
 * sources 2, a delta 2 + 2 × (the answer's length after it), the terminal event (done or error) odd and
 * above every delta. A delta replayed after a reconnection holds all the text since `lastId`; the text
 * of every event received, without duplicates, is the stored answer.
 */
export function eventsAfter(state: TurnState, lastId: number): TurnEvent[] {
  const out: TurnEvent[] = []
  if (lastId < 1) out.push({ id: 1, event: 'meta', data: state.meta })
  if (state.sourcesEvent && lastId < 2) out.push({ id: 2, event: 'sources', data: state.sourcesEvent })
  const length = state.content.length
  // an even id past sources is a delta's: the client holds the answer up to its offset
  const held = lastId >= 2 && lastId % 2 === 0 ? (lastId - 2) / 2 : lastId >= 3 ? Number.POSITIVE_INFINITY : 0
  if (length > held) out.push({ id: 2 + 2 * length, event: 'delta', data: { text: state.content.slice(held) } })
  // the terminal event: unless it was received (an odd id of 3 or more is the terminal's)
  if (state.terminal && !(lastId >= 3 && lastId % 2 === 1)) {
    out.push({ id: 3 + 2 * Math.max(length, Number.isFinite(held) ? held : 0), event: state.terminal.event, data: state.terminal.data })
  }
  return out
}

/** The JSON of a turn: its meta, sources, answer and terminal data (done's usage, or the error). */
export function turnBody(state: TurnState): Record<string, unknown> {
  const sources = (state.sourcesEvent ?? { sources: [], retrieval: null }) as Record<string, unknown>
  const done = state.terminal?.event === 'done' ? state.terminal.data : {}
  const error = state.terminal?.event === 'error' ? { error: state.terminal.data } : {}
  return {
    ...state.meta,
    turn_id: state.turnId,
    conversation_id: state.conversationId,
    status: state.status,
    question: state.question,
    answer: state.content,
    sources: sources.sources ?? [],
    retrieval: sources.retrieval ?? null,
    usage: state.usage ?? null,
    ...done,
    ...error,
  }
}
