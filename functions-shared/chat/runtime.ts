// What the chat keeps between turns, one per process (per deps): the chunk-text and rerank caches, the
// circuit breaker around the chat model, and the chat's metrics.
import { Counter, Gauge, Histogram, type Registry } from 'prom-client'
import type { Deps } from '../deps.ts'
import { TtlCache } from '../lib/ttl-cache.ts'
import { CircuitBreaker, type CircuitState } from '../lib/circuit-breaker.ts'
import type { RetrievalCaches } from './rerank.ts'

export interface ChatMetrics {
  turns: Counter<'path' | 'outcome'>
  stage: Histogram<'stage'>
  cache: Counter<'cache' | 'result'>
  rerank: Counter<'mode'>
  translations: Counter<'outcome'>
  tokensCharged: Counter<string>
  characters: Counter<string>
  circuitTransitions: Counter<'to'>
}

export interface ChatRuntime {
  caches: RetrievalCaches
  breaker: CircuitBreaker
  metrics: ChatMetrics
}

const CIRCUIT_VALUE: Record<CircuitState, number> = { closed: 0, open: 1, half_open: 2 }

function createMetrics(registry: Registry, breaker: () => CircuitBreaker): ChatMetrics {
  new Gauge({
    name: 'chat_circuit_state',
    help: 'Circuit breaker around the chat model: 0 closed, 1 open, 2 half-open',
    registers: [registry],
    collect() {
      this.set(CIRCUIT_VALUE[breaker().state])
    },
  })
  return {
    turns: new Counter({ name: 'chat_turns_total', help: 'Chat turns by path (answer, clarify) and outcome', labelNames: ['path', 'outcome'], registers: [registry] }),
    stage: new Histogram({
      name: 'chat_stage_duration_seconds',
      help: 'Time spent in each step of a chat turn',
      labelNames: ['stage'],
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
      registers: [registry],
    }),
    cache: new Counter({ name: 'chat_cache_lookups_total', help: 'Chat cache lookups by cache (rerank, chunk) and result (hit, miss)', labelNames: ['cache', 'result'], registers: [registry] }),
    rerank: new Counter({ name: 'chat_rerank_total', help: 'Reranks by mode (model, cache, fallback_error, fallback_timeout)', labelNames: ['mode'], registers: [registry] }),
    translations: new Counter({ name: 'chat_translations_total', help: 'Question translations to French by outcome (translated, unchanged, failed)', labelNames: ['outcome'], registers: [registry] }),
    tokensCharged: new Counter({ name: 'chat_tokens_charged_total', help: 'Tokens charged for chat turns', registers: [registry] }),
    characters: new Counter({ name: 'chat_characters_generated_total', help: 'Answer characters generated', registers: [registry] }),
    circuitTransitions: new Counter({ name: 'chat_circuit_transitions_total', help: 'Circuit breaker transitions by new state', labelNames: ['to'], registers: [registry] }),
  }
}

const runtimes = new WeakMap<Deps, ChatRuntime>()

export function chatRuntime(deps: Deps): ChatRuntime {
  let rt = runtimes.get(deps)
  if (rt) return rt
  const { config, clock } = deps
  let breaker: CircuitBreaker | undefined
  const metrics = createMetrics(deps.metrics.registry, () => breaker!)
  const log = deps.logs.get('chat')
  breaker = new CircuitBreaker({
    threshold: config.CIRCUIT_FAILURE_THRESHOLD,
    windowMs: config.CIRCUIT_WINDOW_SECONDS * 1000,
    resetMs: config.CIRCUIT_RESET_SECONDS * 1000,
    clock,
    onChange: (state) => {
      metrics.circuitTransitions.inc({ to: state })
      log.warn({ circuit: state }, `chat model circuit ${state}`)
    },
  })
  const lookup = (cache: 'rerank' | 'chunk') => (hit: boolean) => metrics.cache.inc({ cache, result: hit ? 'hit' : 'miss' })
  rt = {
    caches: {
      chunks: new TtlCache({ ttlMs: config.CHUNK_CACHE_TTL_SECONDS * 1000, max: 20_000, clock, onLookup: lookup('chunk') }),
      rerank: new TtlCache({ ttlMs: config.RERANK_CACHE_TTL_SECONDS * 1000, max: 5_000, clock, onLookup: lookup('rerank') }),
    },
    breaker,
    metrics,
  }
  runtimes.set(deps, rt)
  return rt
}
