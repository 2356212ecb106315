import { readFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
import { parse as parseToml } from 'smol-toml'
import { ConfigError, edgeFunctionRefusal, loadConfig, settings, tierLimits } from '../functions-shared/config.ts'
import { envExample, withSettingsTable } from '../scripts/env-example.ts'
import { ROUTER_NAMES } from '../functions-shared/app.ts'

const read = (path: string) => readFileSync(new URL(`../${path}`, import.meta.url), 'utf8')

describe('settings', () => {
  it('run the embedded mode with no environment at all, with the spec constants as defaults', () => {
    const config = loadConfig({})
    expect(config.DATABASE_URL).toBeUndefined()
    expect(config).toMatchObject({
      PORT: 54321,
      DB_PORT: 54322,
      DATA_DIR: '.data',
      RATE_LIMIT_STORE: 'memory',
      RATE_LIMIT_CHAT_PER_MINUTE: 10,
      RATE_LIMIT_WALLET_PER_MINUTE: 30,
      RATE_LIMIT_UPLOAD_PER_MINUTE: 30,
      RATE_LIMIT_AUTH_PER_MINUTE: 5,
      RATE_LIMIT_ADMIN_PER_MINUTE: 60,
      BILLING_BASE_COST: 5,
      BILLING_CHARS_PER_TOKEN: 200,
      BILLING_CLARIFY_COST: 2,
      WELCOME_BONUS_TOKENS: 50,
      RESERVATION_TTL_SECONDS: 300,
      ACTUAL_COST_CAP_MULTIPLIER: 2,
      VECTOR_DIMENSION: 1536,
      VECTOR_INDEX_NAME: 'curriculum-1536',
      JOB_MAX_ATTEMPTS: 3,
      QUALITY_MIN_TEXT_CHARS: 200,
      QUALITY_MIN_PAGE_CHARS: 50,
      OCR_MIN_CONFIDENCE_AR: 0.7,
      OCR_MIN_CONFIDENCE_FR: 0.8,
      UPLOAD_MAX_BYTES: 100 * 1024 * 1024,
      DUPLICATE_HAMMING_THRESHOLD: 3,
      RERANK_CACHE_TTL_SECONDS: 900,
      CHUNK_CACHE_TTL_SECONDS: 3600,
      RERANK_TIMEOUT_MS: 5000,
      CIRCUIT_FAILURE_THRESHOLD: 3,
      CIRCUIT_WINDOW_SECONDS: 60,
      CIRCUIT_RESET_SECONDS: 120,
      CHUNK_CHARS: 1000,
      CHUNK_CHAR_OVERLAP: 150,
      CHUNK_TOKENS_FR: 512,
      CHUNK_TOKEN_OVERLAP_FR: 64,
      CHUNK_TOKENS_AR: 384,
      CHUNK_TOKEN_OVERLAP_AR: 48,
      LIST_DEFAULT_LIMIT: 50,
      LIST_MAX_LIMIT: 200,
    })
  })

  it('keep an Edge Function on Supabase from serving with the published JWT secret, whose service_role tokens anyone can sign', () => {
    expect(edgeFunctionRefusal(loadConfig({}))).toMatch(/^JWT_SECRET is the published local-development secret/)
    expect(edgeFunctionRefusal(loadConfig({ JWT_JWKS_URL: 'https://ref.supabase.co/auth/v1/.well-known/jwks.json' }))).toMatch(/^JWT_SECRET is the published/)
    expect(edgeFunctionRefusal(loadConfig({ JWT_SECRET: 'a-project-secret-of-its-own-32-characters-long' }))).toBeNull()
    // the Deno entry of every function refuses to serve on it (FUNCTION_PORT is set only behind the local gateway)
    expect(read('supabase/functions/_shared/serve.ts')).toMatch(
      /const refusal = port \? null : edgeFunctionRefusal\(config\)\n\s+if \(refusal\) throw new Error\(refusal\)/,
    )
  })

  it('give the tiers of spec §2.10', () => {
    const config = loadConfig({})
    expect(tierLimits(config, 'free')).toEqual({ topK: 10, rerankN: 3, maxTokens: 500, dailyLimit: 50 })
    expect(tierLimits(config, 'standard')).toEqual({ topK: 20, rerankN: 5, maxTokens: 2000, dailyLimit: 500 })
    expect(tierLimits(config, 'premium')).toEqual({ topK: 30, rerankN: 8, maxTokens: 4000, dailyLimit: null })
  })

  it('parse numbers, booleans and enums from strings, and treat empty strings as unset', () => {
    const config = loadConfig({ PORT: '8080', TRUST_PROXY: 'true', DB_PREPARE: 'off', RATE_LIMIT_STORE: 'postgres', ADMIN_API_KEY: '', DATABASE_URL: '' })
    expect(config).toMatchObject({ PORT: 8080, TRUST_PROXY: true, DB_PREPARE: false, RATE_LIMIT_STORE: 'postgres', ADMIN_API_KEY: '' })
    expect(config.DATABASE_URL).toBeUndefined()
  })

  it('read SUPABASE_DB_URL, as Edge Functions receive it, when DATABASE_URL is unset', () => {
    expect(loadConfig({ SUPABASE_DB_URL: 'postgres://u:p@db.example:5432/postgres' }).DATABASE_URL).toBe('postgres://u:p@db.example:5432/postgres')
  })

  it.each([
    ['PORT', 'eighty'],
    ['PORT', '70000'],
    ['RATE_LIMIT_CHAT_PER_MINUTE', '0'],
    ['TRUST_PROXY', 'maybe'],
    ['RATE_LIMIT_STORE', 'redis'],
    ['JWT_SECRET', 'short'],
    ['DATABASE_URL', 'not a url'],
    ['VECTOR_DIMENSION', '768'],
    ['OCR_MIN_CONFIDENCE_FR', '1.5'],
  ])('stop the start when %s=%j, naming the setting', (key, value) => {
    expect(() => loadConfig({ [key]: value })).toThrow(ConfigError)
    expect(() => loadConfig({ [key]: value })).toThrow(new RegExp(key))
  })

  it('refuse an overlap as large as the chunk', () => {
    expect(() => loadConfig({ CHUNK_CHARS: '100', CHUNK_CHAR_OVERLAP: '100' })).toThrow(/CHUNK_CHAR_OVERLAP/)
  })
})

describe('documentation of the settings', () => {
  it('.env.example lists every setting with its default and meaning (npm run env:example)', () => {
    expect(read('.env.example')).toBe(envExample())
  })

  it('the configuration table of docs/configuration.md is the generated one, naming every setting', () => {
    const readme = read('docs/configuration.md')
    expect(readme).toBe(withSettingsTable(readme))
    expect(Object.keys(settings).filter((k) => !readme.includes(`| \`${k}\` |`))).toEqual([])
  })
})

describe('deno.json', () => {
  const deno = JSON.parse(read('deno.json')) as { nodeModulesDir: string; imports: Record<string, string> }
  const pkg = JSON.parse(read('package.json')) as { dependencies: Record<string, string> }

  it('uses the installed node_modules', () => {
    expect(deno.nodeModulesDir).toBe('manual')
  })

  it('pins every npm: specifier to the version in package.json', () => {
    for (const [name, target] of Object.entries(deno.imports)) {
      const m = /^npm:\/?(@?[^@]+)@([^/]+)\/?$/.exec(target)
      expect(m, `${name} -> ${target}`).not.toBeNull()
      expect(pkg.dependencies[m![1]!], `${m![1]} in package.json`).toBe(m![2])
    }
  })
})

describe('supabase/config.toml', () => {
  const toml = parseToml(read('supabase/config.toml')) as {
    functions: Record<string, { verify_jwt: boolean; entrypoint: string; import_map: string }>
    auth: { hook: { custom_access_token: { enabled: boolean; uri: string } } }
  }

  it('enables the custom access-token hook that the migrations define', () => {
    expect(toml.auth.hook.custom_access_token).toEqual({ enabled: true, uri: 'pg-functions://postgres/public/custom_access_token_hook' })
    expect(read('supabase/migrations/20261101000200_identity.sql')).toContain('create function public.custom_access_token_hook(event jsonb)')
  })

  it('has one [functions.<name>] block per router, with verify_jwt = false', () => {
    expect(Object.keys(toml.functions).sort()).toEqual([...ROUTER_NAMES].sort())
    for (const [name, fn] of Object.entries(toml.functions)) {
      expect(fn.verify_jwt, name).toBe(false)
      expect(fn.entrypoint).toBe(`./functions/${name}/index.ts`)
      expect(() => read(`supabase/${fn.entrypoint.slice(2)}`)).not.toThrow()
    }
  })
})
