// The guides, checked against the repository: the deploy steps (docs/deploying.md) name functions,
// secrets, the hook, the cron job and CLI commands that exist; every `npm run` the README and docs/ mention
// is a script; the operations guide lists every operator command.
import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { parse } from 'smol-toml'
import { describe, expect, it } from 'vitest'
import { settings } from '../functions-shared/config.ts'
import { ROUTER_NAMES } from '../functions-shared/app.ts'

const root = new URL('..', import.meta.url).pathname
const doc = (name: string) => readFileSync(`${root}${name}`, 'utf8')
const readme = doc('README.md')
const docs = readdirSync(`${root}docs`).map((f) => doc(`docs/${f}`)).join('\n')
const section = (text: string, title: string) => {
  const start = text.indexOf(`## ${title}`)
  expect(start, title).toBeGreaterThanOrEqual(0)
  const end = text.indexOf('\n## ', start + 4)
  return text.slice(start, end < 0 ? undefined : end)
}
const guide = doc('docs/deploying.md')
const toml = parse(readFileSync(`${root}supabase/config.toml`, 'utf8')) as Record<string, any>
const migrations = readdirSync(`${root}supabase/migrations`).map((f) => readFileSync(`${root}supabase/migrations/${f}`, 'utf8')).join('\n')

describe('the deploy guide', () => {
  it('deploys every function of config.toml, one per router, each with its entry point, no gateway JWT check and the import map', () => {
    const functions = Object.keys(toml.functions)
    expect(new Set(functions)).toEqual(new Set(ROUTER_NAMES))
    const listed = /deploys the ten functions of\s+`supabase\/config.toml` \(([^)]+)\)/.exec(guide)![1]!.split(/,\s*/)
    expect(new Set(listed)).toEqual(new Set(functions))
    for (const name of functions) {
      const f = toml.functions[name]
      expect(f.verify_jwt, name).toBe(false)
      expect(f.import_map, name).toBe('../deno.json')
      expect(existsSync(new URL(f.entrypoint, `file://${root}supabase/`)), name).toBe(true)
    }
  })

  it('sets only secrets that are settings, and names the settings that differ from local', () => {
    const block = /supabase secrets set ([\s\S]+?)```/.exec(guide)![1]!
    const names = [...block.matchAll(/\b([A-Z][A-Z0-9_]+)=/g)].map((m) => m[1]!)
    expect(names.length).toBeGreaterThan(5)
    for (const name of [...names, 'JWT_JWKS_URL', 'ADMIN_API_KEY']) expect(Object.keys(settings), name).toContain(name)
    for (const name of ['WALLET_INTERNAL_ROUTES', 'FETCH_ALLOW_LOOPBACK', 'RATE_LIMIT_STORE', 'TRUST_PROXY']) expect(guide).toContain(`\`${name}=`)
  })

  it('enables the hook that exists, and schedules the expiry job the migration schedules', () => {
    expect(guide).toContain('`public.custom_access_token_hook`')
    expect(toml.auth.hook.custom_access_token.uri).toBe('pg-functions://postgres/public/custom_access_token_hook')
    expect(migrations).toMatch(/create (or replace )?function public\.custom_access_token_hook\(event jsonb\)/)
    const schedule = /cron\.schedule\('expire-reservations', '\* \* \* \* \*', 'select public\.expire_reservations\(\)'\)/
    expect(migrations).toMatch(schedule)
    expect(guide).toMatch(schedule)
  })

  it('uses CLI commands and a source that exist', () => {
    const usage = readFileSync(`${root}scripts/admin.ts`, 'utf8')
    for (const [, command] of guide.matchAll(/npm run admin -- ([a-z-]+)/g)) expect(usage).toContain(`case '${command}':`)
    const sources = JSON.parse(readFileSync(`${root}config/scraper-sources.json`, 'utf8')).sources.map((s: { name: string }) => s.name)
    for (const [, source] of guide.matchAll(/npm run admin -- (?:sync|ingest --all --source) ([a-z-]+)/g)) expect(sources).toContain(source)
  })
})

describe('the README and docs/', () => {
  it('mention only npm scripts that exist', () => {
    const scripts = Object.keys(JSON.parse(readFileSync(`${root}package.json`, 'utf8')).scripts)
    const mentioned = new Set([...`${readme}\n${docs}`.matchAll(/npm run ([a-z0-9:-]+)/g)].map((m) => m[1]!))
    expect(mentioned.size).toBeGreaterThan(8)
    for (const name of mentioned) expect(scripts, name).toContain(name)
  })

  it('lists every operator command the CLI has', () => {
    const usage = readFileSync(`${root}scripts/admin.ts`, 'utf8')
    const commands = [...usage.matchAll(/case '([a-z-]+)':/g)].map((m) => m[1]!)
    const table = section(doc('docs/operations.md'), 'The demo and the operator CLI')
    for (const command of commands) expect(table, command).toContain(`\`${command}`)
  })
})
