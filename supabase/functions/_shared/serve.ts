// The Deno side of every Edge Function: settings from Deno.env, the database on SUPABASE_DB_URL, one
// router served with Deno.serve. Locally FUNCTION_PORT picks the port; on Supabase the runtime does.
// The edge runtime's globals (EdgeRuntime.waitUntil keeps a function alive for a promise) are typed by
// Supabase's own declarations, as its function template takes them; plain Deno has no EdgeRuntime.
/// <reference types="@supabase/functions-js/src/edge-runtime.d.ts" />
import { getConnInfo } from 'hono/deno'
import type { OpenAPIHono } from '@hono/zod-openapi'
import { createFunctionApp } from '../../../functions-shared/http/shell.ts'
import { type Config, edgeFunctionRefusal, loadConfig } from '../../../functions-shared/config.ts'
import { createDb } from '../../../functions-shared/db/client.ts'
import { type AssetReader, createDeps, type Deps, type SupabaseClients } from '../../../functions-shared/deps.ts'
import { parseSources } from '../../../functions-shared/sources-file.ts'
import { BackgroundTasks } from '../../../functions-shared/lib/background.ts'
import type { AiProvider } from '../../../functions-shared/ai/provider.ts'

const readAsset: AssetReader = async (pkg, file) => {
  if (file.includes('..') || file.startsWith('/')) return null
  try {
    return await Deno.readFile(new URL(`../../../node_modules/${pkg}/${file}`, import.meta.url))
  } catch {
    return null
  }
}

const publicVars = (base: string | undefined): Record<string, string> => (base ? { PUBLIC_URL: base.replace(/\/$/, ''), PUBLIC_HOST: new URL(base).host } : {})

/**
 * What an entry composes in besides its router: the supabase-js clients, for the functions that call
 * Auth; the AI provider, for those whose routes call a model.
 */
export interface FunctionParts {
  supabase?: (config: Config) => SupabaseClients
  ai?: (config: Config) => AiProvider
}

/** Serves one router at /<name>: each entry passes its own (and its parts), so a function loads only its own code. */
export async function serveFunction(name: string, router: (deps: Deps) => OpenAPIHono, parts: FunctionParts = {}): Promise<void> {
  const config = loadConfig()
  const port = Deno.env.get('FUNCTION_PORT')
  // on Supabase (no FUNCTION_PORT: not behind the local gateway), a published secret serves no request
  const refusal = port ? null : edgeFunctionRefusal(config)
  if (refusal) throw new Error(refusal)
  if (!config.DATABASE_URL) throw new Error('SUPABASE_DB_URL (or DATABASE_URL) must be set for Edge Functions')
  const sql = createDb(config.DATABASE_URL, {
    max: config.DB_POOL_MAX,
    prepare: config.DB_PREPARE,
    statementTimeoutMs: config.DB_STATEMENT_TIMEOUT_MS,
    applicationName: `curriculum-tutor/${name}`,
  })
  const deps = createDeps(config, {
    sql,
    readAsset,
    ...(parts.supabase ? { supabase: parts.supabase(config) } : {}),
    ...(parts.ai ? { ai: parts.ai(config) } : {}),
    resolveHost: async (host) => {
      const answers = await Promise.allSettled([Deno.resolveDns(host, 'A'), Deno.resolveDns(host, 'AAAA')])
      return answers.flatMap((a) => (a.status === 'fulfilled' ? a.value : []))
    },
    background: new BackgroundTasks(typeof EdgeRuntime === 'undefined' ? undefined : (p) => EdgeRuntime.waitUntil(p)),
    // sources naming ${PUBLIC_URL} (the local demo portal) are kept only where it is set: behind the
    // local gateway (FUNCTIONS_RUNTIME=deno), not on Supabase
    sources: name === 'scraping' || name === 'admin' ? parseSources(await Deno.readTextFile(config.SCRAPER_SOURCES_FILE), publicVars(config.PUBLIC_URL)) : [],
    remoteAddress: (c) => {
      try {
        return getConnInfo(c).remote.address
      } catch {
        return undefined
      }
    },
  })
  const app = createFunctionApp(deps, name, router)
  if (port) Deno.serve({ port: Number(port), hostname: '127.0.0.1' }, app.fetch)
  else Deno.serve(app.fetch)
}
