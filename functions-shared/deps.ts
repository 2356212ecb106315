// The one dependencies object, built at start and passed down. Each outside-world part has an
// interface, a real implementation and a test double.
import { clientKey } from './net/client.ts'
import type { Context } from 'hono'
import type { Config } from './config.ts'
import type { Sql } from './db/client.ts'
import { type Clock, systemClock } from './lib/clock.ts'
import { createLogRoot, type Logger, type LogRoot } from './lib/logger.ts'
import { createMetrics, type Metrics } from './lib/metrics.ts'
import type { SupabaseClient } from '@supabase/supabase-js'
import type { ConnectGuard, Resolver } from './net/safe-fetch.ts'
import type { Source } from './sources-file.ts'
import type { AiProvider, Embedder } from './ai/provider.ts'
import type { OcrEngine } from './pdf/ocr-port.ts'
import type { PdfExtractor } from './pdf/types.ts'
import { BackgroundTasks } from './lib/background.ts'

/**
 * supabase-js clients on SUPABASE_URL (identity/supabase.ts makes them). The entries of the processes
 * that call Auth (the gateway, the auth and admin functions) pass them in; elsewhere (health, chat...)
 * supabase-js is never loaded.
 */
export interface SupabaseClients {
  /** `clientIp`: the address of the client the call is made for, sent as Sb-Forwarded-For so that Auth
   *  rate-limits that client rather than this service */
  anon(requestId: string, clientIp?: string): Promise<SupabaseClient>
  admin(requestId: string): Promise<SupabaseClient>
}

/** What a process that was not given supabase-js clients answers if it calls Auth: a wiring error, said plainly. */
const unwired = () => Promise.reject(new Error('this process was started without supabase-js clients (pass createSupabaseClients at its entry)'))
const noSupabaseClients: SupabaseClients = { anon: unwired, admin: unwired }

/** Reads a file of an installed package (e.g. the API reference page's assets); null when absent. */
export type AssetReader = (pkg: string, file: string) => Promise<Uint8Array | null>

export interface Deps {
  config: Config
  sql: Sql
  clock: Clock
  logs: LogRoot
  metrics: Metrics
  /** the socket's peer address, from the runtime adapter */
  remoteAddress: (c: Context) => string | undefined
  /**
   * The shell's refusals (a body too large, not UTF-8) on a path another API serves, in that API's shape:
   * the local gateway answers its auth server's paths as GoTrue does. Null: the service's own shape.
   */
  foreignError?: (c: Context, status: number, code: string, message: string) => Response | null
  readAsset: AssetReader
  /** supabase-js clients on SUPABASE_URL (auth sign-up, sign-in and admin calls), when the entry passed them */
  supabase: SupabaseClients
  /** DNS lookup for the download guard, from the runtime adapter */
  resolveHost: Resolver
  /** connections of the download guard checked where they are made, when the runtime can (Node) */
  connectGuard?: ConnectGuard
  /** the scraper sources (SCRAPER_SOURCES_FILE, read by the runtime adapter) */
  sources: Source[]
  /**
   * the AI provider (ai/select.ts: offline unless OPENAI_API_KEY or AI_PROVIDER says otherwise), passed by
   * the entries whose routes call a model (chat, admin, the Node processes); elsewhere never loaded
   */
  ai: AiProvider
  /** embeddings for ingestion: the provider's, unless a test swaps them */
  embedder: Embedder
  /** the page recognizer (OCR) of Node processes; absent on Edge Functions, where such jobs wait for a Node worker */
  ocr?: OcrEngine | undefined
  /**
   * how PDFs' text layers are read: on Node, pdf.js in a worker thread of bounded heap, stopped at the
   * deadline (scripts/lib/pdf-isolate.ts); absent, in the calling thread (Edge Functions: an isolate per request)
   */
  extractPdf?: PdfExtractor | undefined
  /** waits; tests pass one that does not */
  sleep: (ms: number) => Promise<void>
  /** work that outlives its request (ingestion after dispatch), awaited on shutdown */
  background: BackgroundTasks
  /** told each state an ingestion job enters, once committed (progress displays; tests pause a run here) */
  onJobTransition?: (event: { job_id: string; attempt: number; status: string }) => void | Promise<void>
  /** told of each page read while a job reads its pages (progress displays) */
  onJobProgress?: (event: { job_id: string; attempt: number; done: number; total: number }) => void | Promise<void>
}

/** What every service function is called with: the dependencies and the request it serves. */
export interface ServiceContext {
  deps: Deps
  requestId: string
  /** the caller's address, forwarded to Auth (Sb-Forwarded-For) for its per-IP rate limits */
  clientIp?: string | undefined
  /** the client as the per-IP limits count it (rateLimitClient), for the welcome bonus's daily allowance */
  clientKey?: string | undefined
  /** the request's logger (its id and route bound); a service without one logs under deps.logs */
  log?: Logger | undefined
}

/** What a process that was not given an AI provider answers if a route calls a model: a wiring error, said plainly. */
const unwiredAi: AiProvider = new Proxy({} as AiProvider, {
  get: (
    _target,
    key,
  ) => (key === 'then'
    ? undefined
    : () =>
      Promise.reject(new Error(`this process was started without an AI provider (pass ai: createAiProvider(config) at its entry); ${String(key)} called`))),
})

export function createDeps(config: Config, parts: Pick<Deps, 'sql'> & Partial<Deps>): Deps {
  const clock = parts.clock ?? systemClock
  const ai = parts.ai ?? unwiredAi
  const logs = parts.logs ?? createLogRoot({ level: config.LOG_LEVEL })
  const metrics = parts.metrics ?? createMetrics({ sql: parts.sql })
  return {
    ai,
    embedder: ai,
    config,
    clock,
    logs,
    metrics,
    remoteAddress: () => undefined,
    readAsset: async () => null,
    supabase: noSupabaseClients,
    resolveHost: async () => {
      throw new Error('no DNS resolver in this runtime')
    },
    sources: [],
    sleep: (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
    background: new BackgroundTasks(),
    ...parts,
  }
}

/** The client's IP: the first X-Forwarded-For hop when the proxy is trusted, else the socket peer. */
export function clientIp(deps: Deps, c: Context): string {
  if (deps.config.TRUST_PROXY) {
    // each trusted proxy adds the address it saw to the right: the client is TRUSTED_PROXY_HOPS from the
    // right end; what stands left of it the client wrote itself (the leftmost address is anyone's to forge)
    const hops = (c.req.header('x-forwarded-for') ?? '').split(',').map((h) => h.trim()).filter(Boolean)
    const forwarded = hops[Math.max(0, hops.length - deps.config.TRUSTED_PROXY_HOPS)]
    if (forwarded) return forwarded
  }
  return deps.remoteAddress(c) ?? 'unknown'
}

/**
 * The client a per-IP rate limit counts a request against: its address, an IPv6 one by its /64 and all
 * of loopback as one (see net/client.ts), so that a client does not get a fresh quota from each address
 * it can send from.
 */
export function rateLimitClient(deps: Deps, c: Context): string {
  return clientKey(clientIp(deps, c))
}
