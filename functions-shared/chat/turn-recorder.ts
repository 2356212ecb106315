// A chat turn written as it happens, so that it survives its client and its process: the question and
// the answer are chat_messages of a conversation, the answer written in batches (CHAT_PERSIST_INTERVAL_MS,
// CHAT_PERSIST_MAX_CHARS), and the events that are not text (meta, sources, the terminal done or error)
// kept beside it in chat_turns. The process that generates a turn renews its lease; a turn whose lease ran
// out lost its process and is interrupted (public.interrupt_stale_turns). A cancel is a flag any process
// sets and the generating one reads at its next write.
import type { DomainErrorCode } from '../domain/errors.ts'
import type { Deps } from '../deps.ts'
import { storable, storableText } from '../lib/text.ts'
import type { Logger } from '../lib/logger.ts'
import type { Outcome, SettledEnd, TurnSink } from './turn.ts'
import { statusOf, type Terminal, type TurnState, type TurnStatus } from './turn-state.ts'
import { type BeginTurn, titleOf, type TurnWrites } from './turn-writes.ts'
import type { LiveTurns } from './live-turns.ts'

/**
 * The sink of a turn that is generated here: it keeps the turn's state for the followers of this process,
 * writes the answer in batches, renews the lease, and reads a cancel asked for by any process.
 */
export class TurnRecorder implements TurnSink {
  readonly state: TurnState
  /** the student whose turn it is */
  readonly userId: string
  /** aborted by a cancel (this process, or another through the database) */
  readonly cancel = new AbortController()
  /** the database writes this turn made (begin, appends, end) */
  writes = 0
  /** resolves once the turn's end is written (or could not be) */
  finished: Promise<void> = new Promise(() => {})
  readonly #deps: Deps
  readonly #live: LiveTurns<TurnRecorder>
  readonly #writes: TurnWrites
  readonly #log: Logger
  #pending = ''
  #pendingSources: Record<string, unknown> | null = null
  #writing: Promise<void> = Promise.resolve()
  #lastWrite: number
  #cancelFlush = () => {}
  #flushArmed = false
  #cancelLease = () => {}
  #ended = false

  private constructor(deps: Deps, live: LiveTurns<TurnRecorder>, writes: TurnWrites, log: Logger, userId: string, state: TurnState) {
    this.userId = userId
    this.#writes = writes
    this.#deps = deps
    this.#live = live
    this.#log = log
    this.state = state
    this.#lastWrite = deps.clock.now()
  }

  /**
   * The turn's conversation (made from the question when none is given) and its messages, then the
   * recorder; `begun`: the conversation whose turn the statement that held its tokens already wrote.
   */
  static async begin(
    deps: Deps,
    live: LiveTurns<TurnRecorder>,
    writes: TurnWrites,
    log: Logger,
    b: BeginTurn & { begun?: string | undefined },
  ): Promise<TurnRecorder> {
    const meta = storable({ ...b.meta, turn_id: b.turnId })
    const question = storableText(b.question)
    const conversationId = b.begun ?? await writes.begin({ ...b, question, title: titleOf(question), meta })
    const recorder = new TurnRecorder(deps, live, writes, log, b.userId, {
      turnId: b.turnId,
      conversationId,
      status: 'streaming',
      meta: { ...meta, conversation_id: conversationId },
      sourcesEvent: null,
      content: '',
      terminal: null,
      usage: null,
      question,
    })
    recorder.writes = 1
    live.add(recorder)
    recorder.#armLease()
    return recorder
  }

  meta(data: Record<string, unknown>): void {
    Object.assign(this.state.meta, storable(data), { turn_id: this.state.turnId, conversation_id: this.state.conversationId })
    this.#moved()
  }

  sources(data: { sources: unknown[]; retrieval: Record<string, unknown> | null }): void {
    const event = storable(data) as Record<string, unknown>
    this.state.sourcesEvent = event
    this.#pendingSources = event
    this.#moved()
  }

  delta(text: string): void {
    // what the client reads and what is stored are one text (NUL and lone surrogates cannot be stored)
    const t = storableText(text)
    if (t === '') return
    this.state.content += t
    this.#pending += t
    this.#moved()
    // in batches: an answer that ends within the interval is written once, with its end
    if (this.#pending.length >= this.#deps.config.CHAT_PERSIST_MAX_CHARS) this.#flush()
    else this.#scheduleFlush()
  }

  async closing(data: Record<string, unknown>): Promise<SettledEnd | null> {
    if (!this.#writes.durable || this.#ended) return null
    // the text sent so far is written (or kept in #pending when its write failed) before the end is taken
    this.#cancelFlush()
    await this.#writing
    return {
      turnId: this.state.turnId,
      status: statusOf(data.outcome as Outcome),
      text: this.#pending,
      sourcesEvent: this.#pendingSources,
      terminal: { event: 'done', data: storable(data) },
      document: this.#firstSourceDocument(),
    }
  }

  done(data: Record<string, unknown>, written?: Terminal): void {
    const outcome = data.outcome as Outcome
    // written with the settlement: the same values, in the order the service writes them (a stored
    // jsonb keeps its own), with the settlement's time the statement measured
    if (written) this.#endWritten(statusOf(outcome), { event: 'done', data: storable({ ...data, timings: written.data.timings ?? data.timings }) })
    else this.#end(statusOf(outcome), { event: 'done', data: storable(data) }, (data.usage as Record<string, unknown> | null) ?? null)
  }

  error(data: { error: DomainErrorCode; message: string; request_id: string }): void {
    this.#end('failed', { event: 'error', data: storable(data) }, null)
  }

  /** The document the answer cited first (a charged answer's first source), whose lesson the conversation keeps. */
  #firstDocument(): string | null {
    const charged = ((this.state.usage as { charged?: number } | null)?.charged ?? 0) > 0
    return charged ? this.#firstSourceDocument() : null
  }

  #firstSourceDocument(): string | null {
    const first = (this.state.sourcesEvent?.sources as { document_id?: string }[] | undefined)?.[0]?.document_id
    return typeof first === 'string' ? first : null
  }

  /** The end the settlement's statement wrote (closing): kept as written, nothing more to write. */
  #endWritten(status: TurnStatus, terminal: Terminal): void {
    if (!this.#close(status, terminal, (terminal.data.usage as Record<string, unknown> | null) ?? null)) return
    this.#pending = ''
    this.#pendingSources = null
    this.writes++
    this.#live.moved(this.state.turnId)
    this.finished = this.#writing.then(() => {
      this.#live.remove(this.state.turnId, 0)
      this.#deps.metrics.chat.turnWrites.observe(this.writes)
    })
  }

  #moved(): void {
    this.#live.moved(this.state.turnId)
  }

  #scheduleFlush(): void {
    if (this.#ended || this.#flushArmed) return
    this.#flushArmed = true
    const wait = Math.max(0, this.#deps.config.CHAT_PERSIST_INTERVAL_MS - (this.#deps.clock.now() - this.#lastWrite))
    this.#cancelFlush = this.#deps.clock.setTimer(wait, () => this.#flush())
  }

  /** Renews the lease (and reads a cancel) at least every third of CHAT_TURN_LEASE_SECONDS. */
  #armLease(): void {
    this.#cancelLease()
    if (this.#ended) return
    this.#cancelLease = this.#deps.clock.setTimer((this.#deps.config.CHAT_TURN_LEASE_SECONDS * 1000) / 3, () => {
      this.#flush()
    })
  }

  /** Writes what waits (possibly nothing: the lease is renewed), after the writes before it. */
  #flush(): void {
    if (this.#ended) return
    this.#cancelFlush()
    this.#flushArmed = false
    this.#armLease()
    const text = this.#pending
    const sources = this.#pendingSources
    this.#pending = ''
    this.#pendingSources = null
    this.#lastWrite = this.#deps.clock.now()
    this.#writing = this.#writing.then(async () => {
      try {
        const cancel = await this.#writes.append(this.state.turnId, text, sources)
        this.writes++
        if (cancel && !this.cancel.signal.aborted) {
          this.#log.info({ turn_id: this.state.turnId }, 'the turn was cancelled from another request')
          this.cancel.abort()
        }
      } catch (err) {
        // kept for the next write, in order: the stored answer stays the text that was sent
        this.#pending = text + this.#pending
        this.#pendingSources ??= sources
        this.#log.warn({ turn_id: this.state.turnId, err: { message: (err as Error).message } }, 'the answer could not be written yet')
      }
    })
  }

  /** The turn's end in its state, once: whether this call ended it. */
  #close(status: TurnStatus, terminal: Terminal, usage: Record<string, unknown> | null): boolean {
    if (this.#ended) return false
    this.#ended = true
    this.#cancelFlush()
    this.#cancelLease()
    this.state.status = status
    this.state.terminal = terminal
    this.state.usage = usage
    return true
  }

  #end(status: TurnStatus, terminal: Terminal, usage: Record<string, unknown> | null): void {
    if (!this.#close(status, terminal, usage)) return
    this.#moved()
    const text = () => this.#pending
    this.finished = this.#writing.then(async () => {
      for (let attempt = 1;; attempt++) {
        try {
          await this.#writes.end(this.state.turnId, {
            status,
            text: text(),
            sourcesEvent: this.#pendingSources,
            terminal,
            usage,
            document: this.#firstDocument(),
          })
          this.writes++
          break
        } catch (err) {
          this.#log.error({ turn_id: this.state.turnId, attempt, err: { message: (err as Error).message } }, 'the end of the turn could not be written')
          // past its lease, the turn is interrupted by whoever reads it: its text as far as it was written
          if (attempt >= 3) break
        }
      }
      this.#live.remove(this.state.turnId, this.#writes.durable ? 0 : 60_000)
      this.#deps.metrics.chat.turnWrites.observe(this.writes)
    })
  }
}
