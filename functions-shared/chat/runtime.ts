// What the chat keeps between turns, one per process (chatRuntime makes it at the first chat request): the chunk-text and rerank
// caches, the circuit breaker around the chat model, and the chat's series (lib/metrics.ts).
import type { Config } from '../config.ts'
import type { Clock } from '../lib/clock.ts'
import type { Logger } from '../lib/logger.ts'
import type { ChatMetrics } from '../lib/metrics.ts'
import { TtlCache } from '../lib/ttl-cache.ts'
import { CircuitBreaker } from '../lib/circuit-breaker.ts'
import { refusedByModel } from '../ai/provider.ts'
import type { TurnRuntime } from './turn.ts'
import { LiveTurns } from './live-turns.ts'
import type { Deps } from '../deps.ts'
import type { TurnRecorder } from './turn-recorder.ts'
import type { TurnWrites } from './turn-writes.ts'

/**
 * How long the catalogue's grades and subjects are kept between turns. They change only when a document is
 * published or deleted, and what a turn reads them for (a grade or subject stored in an older form of the
 * names a request gives) concerns documents stored long before: a document just published is stored in the
 * form the request is read in, and found without them (what reading them on every turn costs: docs/teacher.md).
 */
export const PLACES_TTL_MS = 10_000

export interface ChatRuntime extends TurnRuntime {
  /** the turns this process generates, for the followers and cancels that reach this process */
  live: LiveTurns<TurnRecorder>
  /** where turns are written: the database unless given (bench:chat measures a turn written nowhere beside it) */
  writes?: TurnWrites
}

export function createChatRuntime(config: Config, clock: Clock, metrics: ChatMetrics, log: Logger): ChatRuntime {
  const breaker = new CircuitBreaker({
    threshold: config.CIRCUIT_FAILURE_THRESHOLD,
    windowMs: config.CIRCUIT_WINDOW_SECONDS * 1000,
    resetMs: config.CIRCUIT_RESET_SECONDS * 1000,
    clock,
    // a request the model refuses for what it holds (400 too long, 413, 422; a content filter's 400) is
    // that request's fault: counted, one student could shut the chat off for everyone
    ignore: refusedByModel,
    onChange: (state) => {
      metrics.circuitTransitions.inc({ to: state })
      log.warn({ circuit: state }, `chat model circuit ${state}`)
    },
  })
  const lookup = (cache: 'rerank' | 'chunk') => (hit: boolean) => metrics.cache.inc({ cache, result: hit ? 'hit' : 'miss' })
  return {
    caches: {
      chunks: new TtlCache({ ttlMs: config.CHUNK_CACHE_TTL_SECONDS * 1000, max: 20_000, clock, onLookup: lookup('chunk') }),
      rerank: new TtlCache({ ttlMs: config.RERANK_CACHE_TTL_SECONDS * 1000, max: 5_000, clock, onLookup: lookup('rerank') }),
      places: new TtlCache({ ttlMs: PLACES_TTL_MS, max: 1, clock }),
    },
    breaker,
    metrics,
    live: new LiveTurns(),
  }
}

const runtimes = new WeakMap<Deps, ChatRuntime>()

/**
 * The process's chat runtime, made at the first chat request (only the processes that serve the chat
 * hold one), its breaker read by the chat_circuit_state gauge.
 */
export function chatRuntime(deps: Deps): ChatRuntime {
  let rt = runtimes.get(deps)
  if (!rt) {
    const made = createChatRuntime(deps.config, deps.clock, deps.metrics.chat, deps.logs.get('chat'))
    deps.metrics.circuit.state = () => made.breaker.state
    runtimes.set(deps, rt = made)
  }
  return rt
}
