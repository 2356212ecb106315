// What the chat keeps between turns, one per process (createDeps makes it): the chunk-text and rerank
// caches, the circuit breaker around the chat model, and the chat's series (http/metrics.ts).
import type { Config } from '../config.ts'
import type { Clock } from '../lib/clock.ts'
import type { Logger } from '../lib/logger.ts'
import type { ChatMetrics } from '../http/metrics.ts'
import { TtlCache } from '../lib/ttl-cache.ts'
import { CircuitBreaker } from '../lib/circuit-breaker.ts'
import { refusedByModel } from '../ai/provider.ts'
import type { ChunkText } from './retrieve.ts'

/** chunk text by chunk id and ingestion timestamp; a ranking (chunk ids) by question, scope and tier */
export interface RetrievalCaches {
  chunks: TtlCache<ChunkText>
  rerank: TtlCache<string[]>
}

export interface ChatRuntime {
  caches: RetrievalCaches
  breaker: CircuitBreaker
  metrics: ChatMetrics
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
    },
    breaker,
    metrics,
  }
}
