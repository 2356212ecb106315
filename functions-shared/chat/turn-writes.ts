// Where a chat turn is written (the database, or nowhere for the benchmark of what storing costs), and
// the start of its record as the statement that holds its tokens writes it (settle.ts, checkWallet).
import type { Deps } from '../deps.ts'
import { storable, storableText } from '../lib/text.ts'
import type { Terminal, TurnStatus } from './turn-state.ts'

/**
 * Where a turn is written: the database (every process can read it), or, for the benchmark that measures
 * what storing costs, nowhere (the turn lives in this process's memory only).
 */
export interface TurnWrites {
  /** the turn's conversation (made from the question when none is given), its messages and its state */
  begin(b: BeginTurn & { title: string; meta: Record<string, unknown> }): Promise<string>
  /** the text since the last write (and the sources event with the first text); whether a cancel was asked for */
  append(turnId: string, text: string, sourcesEvent: Record<string, unknown> | null): Promise<boolean>
  end(
    turnId: string,
    end: {
      status: TurnStatus
      text: string
      sourcesEvent: Record<string, unknown> | null
      terminal: Terminal
      usage: Record<string, unknown> | null
      document: string | null
    },
  ): Promise<void>
  /** false: a turn is read from memory only, and kept there a while after its end */
  readonly durable: boolean
}

export function databaseTurnWrites(deps: Deps): TurnWrites {
  const json = (v: unknown) => (v === null ? null : deps.sql.json(v as never))
  const lease = deps.config.CHAT_TURN_LEASE_SECONDS
  return {
    durable: true,
    async begin(b) {
      const [row] = await deps.sql<{ conversation_id: string }[]>`
        select public.begin_conversation_turn(${b.turnId}, ${b.userId}, ${b.conversationId}, ${b.reservationId}, ${b.requestId},
                                              ${b.question}, ${b.title}, ${json(b.meta)}, ${lease}, ${b.lesson.grade}, ${b.lesson.subject}) as conversation_id`
      return row!.conversation_id
    },
    async append(turnId, text, sourcesEvent) {
      const [row] = await deps.sql<{ cancel: boolean }[]>`select public.append_turn_text(${turnId}, ${text}, ${json(sourcesEvent)}, ${lease}) as cancel`
      return row?.cancel === true
    },
    async end(turnId, e) {
      await deps.sql`
        select public.end_conversation_turn(${turnId}, ${e.status}, ${e.text}, ${json(e.sourcesEvent)}, ${json(e.terminal)}, ${json(e.usage)}, ${e.document})`
    },
  }
}

/** Nothing written (bench:chat's turn without storage, measured beside the stored one). */
export function memoryTurnWrites(): TurnWrites {
  return {
    durable: false,
    begin: async (b) => b.conversationId ?? crypto.randomUUID(),
    append: async () => false,
    end: async () => {},
  }
}

/**
 * A turn's record as it begins in the statement that holds its tokens (settle.ts, checkWallet:
 * public.begin_recorded_chat_turn), when the turns are written to the database: its conversation,
 * question and title, and its meta without what is held (the statement adds the tier, the hint level and
 * the reservation).
 */
export interface RecordedStart {
  turnId: string
  conversationId: string | null
  question: string
  title: string
  meta: Record<string, unknown>
  lesson: { grade: string | null; subject: string | null }
  leaseSeconds: number
}

/** The start of a turn's record, written as TurnRecorder.begin writes it (its question and meta storable). */
export function recordedStart(
  deps: Deps,
  b: Pick<BeginTurn, 'turnId' | 'conversationId' | 'question' | 'meta' | 'lesson'>,
): RecordedStart {
  const question = storableText(b.question)
  return {
    turnId: b.turnId,
    conversationId: b.conversationId,
    question,
    title: titleOf(question),
    meta: storable({ ...b.meta, turn_id: b.turnId }),
    lesson: b.lesson,
    leaseSeconds: deps.config.CHAT_TURN_LEASE_SECONDS,
  }
}

export interface BeginTurn {
  turnId: string
  userId: string
  conversationId: string | null
  reservationId: string
  requestId: string
  question: string
  meta: Record<string, unknown>
  /** the grade and subject the turn was asked or inferred with: its conversation's lesson for the follow-ups (unless its answer's first source is of another) */
  lesson: { grade: string | null; subject: string | null }
}

/** A conversation's title: its first question, cut at a word near 80 characters. */
export function titleOf(question: string): string {
  const flat = question.replace(/\s+/gu, ' ').trim()
  if (flat.length <= 80) return flat
  const cut = flat.slice(0, 80)
  const space = cut.lastIndexOf(' ')
  return `${(space >= 40 ? cut.slice(0, space) : cut).trimEnd()}…`
}
