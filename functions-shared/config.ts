// Every setting of the service, parsed once from the environment with zod. The defaults make the
// embedded mode work with no .env at all; every constant of the spec (§8) is a named setting (config-settings.ts).
import { z } from 'zod'
import type { TIERS } from './domain/enums.ts'
import { LOCAL_JWT_SECRET, settings } from './config-settings.ts'

export { LOCAL_JWT_SECRET, settings }

type Settings = typeof settings
export type Config = { [K in keyof Settings]: z.output<Settings[K][0]> }

const schema = z.object(
  Object.fromEntries(Object.entries(settings).map(([k, [s]]) => [k, s])) as {
    [K in keyof Settings]: Settings[K][0]
  },
)

export class ConfigError extends Error {
  override name = 'ConfigError'
}

/** Reads the environment of whichever runtime runs us (Node's process.env or Deno.env). */
export function readEnv(): Record<string, string | undefined> {
  const g = globalThis as { Deno?: { env: { toObject(): Record<string, string> } }; process?: { env: Record<string, string | undefined> } }
  if (g.Deno) return g.Deno.env.toObject()
  return g.process?.env ?? {}
}

/** Parses every setting; a bad one stops the start with a message naming it. Empty strings count as unset. */
export function loadConfig(env: Record<string, string | undefined> = readEnv()): Config {
  const input: Record<string, string | undefined> = {}
  for (const key of Object.keys(settings)) {
    const value = env[key]
    if (value !== undefined && value !== '') input[key] = value
  }
  if (input.DATABASE_URL === undefined && env.SUPABASE_DB_URL) input.DATABASE_URL = env.SUPABASE_DB_URL
  const parsed = schema.safeParse(input)
  if (!parsed.success) {
    const problems = parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')
    throw new ConfigError(`invalid setting ${problems}`)
  }
  const config = parsed.data as Config
  if (config.CHUNK_CHAR_OVERLAP >= config.CHUNK_CHARS) throw new ConfigError('invalid setting CHUNK_CHAR_OVERLAP: must be below CHUNK_CHARS')
  if (config.LIST_DEFAULT_LIMIT > config.LIST_MAX_LIMIT) throw new ConfigError('invalid setting LIST_DEFAULT_LIMIT: must not exceed LIST_MAX_LIMIT')
  if (config.AI_PROVIDER === 'openai' && !config.OPENAI_API_KEY) throw new ConfigError('invalid setting AI_PROVIDER: openai needs OPENAI_API_KEY')
  return config
}

/**
 * Why an Edge Function served by Supabase (not behind the local gateway) must not start with these
 * settings, or null. The default JWT_SECRET is the Supabase CLI's, published: a function verifying tokens
 * with it (they run with verify_jwt = false) would take a service_role token that anyone can sign, and
 * with it every admin route (top-ups included). Locally the gateway keeps its own rule (scripts/lib/stack.ts).
 */
export function edgeFunctionRefusal(config: Config): string | null {
  if (config.JWT_SECRET === LOCAL_JWT_SECRET) {
    return "JWT_SECRET is the published local-development secret: set it to the project's JWT secret (supabase secrets set JWT_SECRET=...) before serving this function"
  }
  return null
}

/** The gateway's own base URL, as printed at start and used as SUPABASE_URL by default. */
export function publicUrl(config: Config): string {
  return (config.PUBLIC_URL ?? `http://${config.HOST}:${config.PORT}`).replace(/\/$/, '')
}

export type Tier = (typeof TIERS)[number]
export interface TierLimits {
  topK: number
  rerankN: number
  maxTokens: number
  /** requests per day; null means unlimited */
  dailyLimit: number | null
}

export function tierLimits(config: Config, tier: Tier): TierLimits {
  const pick = {
    free: [config.TIER_FREE_TOP_K, config.TIER_FREE_RERANK_N, config.TIER_FREE_MAX_TOKENS, config.TIER_FREE_DAILY_LIMIT],
    standard: [config.TIER_STANDARD_TOP_K, config.TIER_STANDARD_RERANK_N, config.TIER_STANDARD_MAX_TOKENS, config.TIER_STANDARD_DAILY_LIMIT],
    premium: [config.TIER_PREMIUM_TOP_K, config.TIER_PREMIUM_RERANK_N, config.TIER_PREMIUM_MAX_TOKENS, config.TIER_PREMIUM_DAILY_LIMIT],
  }[tier]
  const [topK, rerankN, maxTokens, daily] = pick as [number, number, number, number]
  return { topK, rerankN, maxTokens, dailyLimit: daily === 0 ? null : daily }
}
