// Every Prometheus series of the service, defined in one place and made once per process (createDeps):
// HTTP requests, the wallet, ingestion and the chat. A process registers them all, whatever it serves;
// on Supabase, where each function is its own process, a function's /metrics counts its own work
// (docs/operations.md), and the jobs by state are read from the database.
import { Counter, Gauge, Histogram, Registry } from 'prom-client'
import type { Sql } from '../db/client.ts'
/** The chat model's breaker's states (lib/circuit-breaker.ts), as the gauge reports them. */
type CircuitState = 'closed' | 'open' | 'half_open'

export interface WalletMetrics {
  tokens: Counter<'movement'>
  reservations: Counter<'outcome'>
}

export interface IngestionMetrics {
  stageSeconds: Histogram<'stage'>
  pages: Counter
  chunks: Counter
  retries: Counter<'stage'>
  outcomes: Counter<'outcome'>
  failures: Counter<'reason'>
  ocrPages: Counter<'outcome'>
  ocrSeconds: Counter
}

export interface ChatMetrics {
  turns: Counter<'path' | 'outcome'>
  stage: Histogram<'stage'>
  cache: Counter<'cache' | 'result'>
  rerank: Counter<'mode'>
  translations: Counter<'outcome'>
  tokensCharged: Counter<string>
  /** the database writes of each stored turn: begin, the answer's batches, end */
  turnWrites: Histogram<string>
  characters: Counter<string>
  circuitTransitions: Counter<'to'>
}

export interface Metrics {
  registry: Registry
  observeRequest(method: string, route: string, status: number, seconds: number): void
  wallet: WalletMetrics
  ingestion: IngestionMetrics
  chat: ChatMetrics
  /** where the chat_circuit_state gauge reads the chat model's breaker: set by the process's chat runtime */
  circuit: { state: () => CircuitState }
}

export interface MetricSources {
  /** the database, for the jobs by state (read at scrape time) */
  sql?: Sql
  /** the chat model's circuit breaker, read at scrape time */
  circuitState?: () => CircuitState
}

const CIRCUIT_VALUE: Record<CircuitState, number> = { closed: 0, open: 1, half_open: 2 }

export function createMetrics(sources: MetricSources = {}): Metrics {
  const registry = new Registry()
  const registers = [registry]
  const requests = new Counter({
    name: 'http_requests_total',
    help: 'HTTP requests by method, route pattern and status',
    labelNames: ['method', 'route', 'status'] as const,
    registers,
  })
  const latency = new Histogram({
    name: 'http_request_duration_seconds',
    help: 'HTTP request latency by method, route pattern and status',
    labelNames: ['method', 'route', 'status'] as const,
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
    registers,
  })
  const { sql } = sources
  const circuit = { state: sources.circuitState ?? ((): CircuitState => 'closed') }
  if (sql) {
    new Gauge({
      name: 'ingestion_jobs',
      help: 'Ingestion jobs by state (read from the database at scrape time)',
      labelNames: ['state'],
      registers,
      async collect() {
        const rows = await sql<{ status: string; n: number }[]>`select status, count(*)::int as n from public.ingestion_jobs group by status`.catch(() => [])
        this.reset()
        for (const r of rows) this.set({ state: r.status }, r.n)
      },
    })
  }
  new Gauge({
    name: 'chat_circuit_state',
    help: 'Circuit breaker around the chat model: 0 closed, 1 open, 2 half-open',
    registers,
    collect() {
      this.set(CIRCUIT_VALUE[circuit.state()])
    },
  })
  return {
    registry,
    circuit,
    observeRequest(method, route, status, seconds) {
      const labels = { method, route, status: String(status) }
      requests.inc(labels)
      latency.observe(labels, seconds)
    },
    wallet: {
      tokens: new Counter({
        name: 'wallet_tokens_total',
        help: 'Tokens moved, by movement (reserved, charged, refunded, expired, topped_up)',
        labelNames: ['movement'],
        registers,
      }),
      reservations: new Counter({
        name: 'wallet_reservations_total',
        help: 'Reservations by outcome (reserved, insufficient, finalized, conflict, expired)',
        labelNames: ['outcome'],
        registers,
      }),
    },
    ingestion: {
      stageSeconds: new Histogram({
        name: 'ingestion_stage_seconds',
        help: 'Time spent per pipeline stage',
        labelNames: ['stage'],
        buckets: [0.01, 0.05, 0.1, 0.5, 1, 5, 15, 60, 300],
        registers,
      }),
      pages: new Counter({ name: 'ingestion_pages_total', help: 'Pages with text processed', registers }),
      chunks: new Counter({ name: 'ingestion_chunks_total', help: 'Chunks stored', registers }),
      retries: new Counter({ name: 'ingestion_retries_total', help: 'Retries of transient failures, by stage', labelNames: ['stage'], registers }),
      outcomes: new Counter({ name: 'ingestion_jobs_finished_total', help: 'Jobs finished, by outcome', labelNames: ['outcome'], registers }),
      failures: new Counter({ name: 'ingestion_failures_total', help: 'Failed jobs, by reason', labelNames: ['reason'], registers }),
      ocrPages: new Counter({
        name: 'ingestion_ocr_pages_total',
        help: 'Pages given to the recognizer, by outcome: used (its text kept), kept_layer (the text layer read better), failed (error or deadline)',
        labelNames: ['outcome'],
        registers,
      }),
      ocrSeconds: new Counter({ name: 'ingestion_ocr_seconds_total', help: 'Wall time spent recognizing pages (rendering included)', registers }),
    },
    chat: {
      turns: new Counter({ name: 'chat_turns_total', help: 'Chat turns by path (answer, clarify) and outcome', labelNames: ['path', 'outcome'], registers }),
      stage: new Histogram({
        name: 'chat_stage_duration_seconds',
        help: 'Time spent in each step of a chat turn',
        labelNames: ['stage'],
        buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
        registers,
      }),
      cache: new Counter({
        name: 'chat_cache_lookups_total',
        help: 'Chat cache lookups by cache (rerank, chunk) and result (hit, miss)',
        labelNames: ['cache', 'result'],
        registers,
      }),
      rerank: new Counter({
        name: 'chat_rerank_total',
        help: 'Reranks by mode (model, cache, fallback_error, fallback_timeout)',
        labelNames: ['mode'],
        registers,
      }),
      translations: new Counter({
        name: 'chat_translations_total',
        help: 'Question translations to French by outcome (translated, unchanged, failed)',
        labelNames: ['outcome'],
        registers,
      }),
      tokensCharged: new Counter({ name: 'chat_tokens_charged_total', help: 'Tokens charged for chat turns', registers }),
      turnWrites: new Histogram({
        name: 'chat_turn_writes',
        help: 'Database writes of a stored chat turn (begin, the answer written in batches, end)',
        buckets: [2, 3, 4, 6, 8, 12, 16, 24, 32, 64],
        registers,
      }),
      characters: new Counter({ name: 'chat_characters_generated_total', help: 'Answer characters generated', registers }),
      circuitTransitions: new Counter({
        name: 'chat_circuit_transitions_total',
        help: 'Circuit breaker transitions by new state',
        labelNames: ['to'],
        registers,
      }),
    },
  }
}
