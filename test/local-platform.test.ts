// functions-shared/ holds what the Edge Functions deploy; the local stand-ins for Supabase's own servers
// (the auth server, PostgREST) live in local-platform/, and no deployed function's module graph reaches
// them: Deno's own resolution of each entry is read, not a guess from the file names.
import { execFileSync } from 'node:child_process'
import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'

const root = new URL('..', import.meta.url).pathname
const functions = readdirSync(join(root, 'supabase/functions'), { withFileTypes: true })
  .filter((d) => d.isDirectory() && !d.name.startsWith('_') && existsSync(join(root, 'supabase/functions', d.name, 'index.ts')))
  .map((d) => d.name)

describe('the deployed code and the local platform', () => {
  it.each(functions)("the %s function's module graph stays out of local-platform/", (name) => {
    const out = execFileSync(join(root, 'node_modules/.bin/deno'), ['info', '--json', `supabase/functions/${name}/index.ts`], {
      cwd: root,
      encoding: 'utf8',
      maxBuffer: 64 * 1024 * 1024,
    })
    const modules = (JSON.parse(out) as { modules: { specifier: string }[] }).modules.map((m) => m.specifier).filter((s) => s.startsWith('file://'))
    expect(modules.some((s) => s.includes('/functions-shared/'))).toBe(true)
    expect(modules.filter((s) => s.includes('/local-platform/'))).toEqual([])
  })

  it('has no file of functions-shared/ that imports from local-platform/', () => {
    const walk = (dir: string): string[] =>
      readdirSync(dir, { withFileTypes: true }).flatMap((d) => (d.isDirectory() ? walk(join(dir, d.name)) : d.name.endsWith('.ts') ? [join(dir, d.name)] : []))
    const offenders = walk(join(root, 'functions-shared')).filter((f) => /from ['"][^'"]*local-platform\//.test(readFileSync(f, 'utf8')))
    expect(offenders).toEqual([])
  })
})
