// The house's rules, read from the code: files that stay readable, no import cycle in the deployed code
// (type-only imports included), every room on its floor importing only from its own floor or below, and a
// function that loads only what it serves (Deno's own module graph, as it deploys).
import { execFileSync } from 'node:child_process'
import { readdirSync, readFileSync } from 'node:fs'
import { dirname, join, relative, resolve } from 'node:path'
import { describe, expect, it } from 'vitest'

const root = new URL('..', import.meta.url).pathname
const shared = join(root, 'functions-shared')
const walk = (dir: string): string[] =>
  readdirSync(dir, { withFileTypes: true }).flatMap((d) => (d.isDirectory() ? walk(join(dir, d.name)) : /\.m?ts$/.test(d.name) ? [join(dir, d.name)] : []))

/** The rooms of functions-shared/, lowest floor first: a room imports from its own floor or those below. */
const FLOORS: readonly (readonly string[])[] = [
  // foundations: no service knowledge
  ['lib', 'domain', 'text', 'version.ts', 'config.ts', 'config-settings.ts', 'db', 'net', 'sources-file.ts'],
  // reading PDFs, calling models
  ['pdf', 'ai'],
  // what every service is given
  ['deps.ts'],
  // the HTTP shell, guards and errors
  ['http'],
  // the services and their routes
  ['identity', 'wallet', 'catalogue', 'ingestion', 'chat', 'curriculum'],
  // routers made of several services, and the composition of all
  ['admin', 'docs', 'health', 'metrics', 'app.ts'],
]
const floorOf = (file: string) => FLOORS.findIndex((rooms) => rooms.includes(file.split('/')[0]!))

/** Each file of functions-shared/ (relative) with the files of functions-shared/ it imports, `import type` included. */
const graph = new Map(
  walk(shared).map((file) => {
    const imports = [...readFileSync(file, 'utf8').matchAll(/(?:from|import)\s*\(?\s*'(\.[^']+)'/g)]
      .map((m) => resolve(dirname(file), m[1]!))
      .filter((target) => target.startsWith(shared))
      .map((target) => relative(shared, target))
    return [relative(shared, file), imports] as const
  }),
)

/** The strongly connected components of more than one file (Tarjan): each is an import cycle. */
function cycles(edges: ReadonlyMap<string, readonly string[]>): string[][] {
  let counter = 0
  const index = new Map<string, number>()
  const low = new Map<string, number>()
  const stack: string[] = []
  const onStack = new Set<string>()
  const found: string[][] = []
  const visit = (v: string) => {
    index.set(v, counter)
    low.set(v, counter++)
    stack.push(v)
    onStack.add(v)
    for (const w of edges.get(v) ?? []) {
      if (!index.has(w)) {
        visit(w)
        low.set(v, Math.min(low.get(v)!, low.get(w)!))
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!))
    }
    if (low.get(v) === index.get(v)) {
      const component: string[] = []
      let w: string
      do {
        w = stack.pop()!
        onStack.delete(w)
        component.push(w)
      } while (w !== v)
      if (component.length > 1) found.push(component.sort())
    }
  }
  for (const v of edges.keys()) if (!index.has(v)) visit(v)
  return found
}

describe('the house', () => {
  it('has no file over 300 lines in functions-shared/ or scripts/', () => {
    const long = [...walk(shared), ...walk(join(root, 'scripts'))]
      .map((f) => ({ file: relative(root, f), lines: readFileSync(f, 'utf8').split('\n').length - 1 }))
      .filter((f) => f.lines > 300)
    expect(long).toEqual([])
  })

  it('opens every file of the code with a comment saying what it is for', () => {
    const silent = ['functions-shared', 'scripts', 'local-platform', 'supabase/functions']
      .flatMap((dir) => walk(join(root, dir)))
      .filter((f) => !readFileSync(f, 'utf8').startsWith('//'))
      .map((f) => relative(root, f))
    expect(silent).toEqual([])
  })

  it('has no import cycle in functions-shared/, type-only imports included', () => {
    expect(graph.size).toBeGreaterThan(100)
    expect(cycles(graph)).toEqual([])
    // the check finds one when there is one
    expect(cycles(new Map([['a.ts', ['b.ts']], ['b.ts', ['c.ts']], ['c.ts', ['a.ts']]]))).toEqual([['a.ts', 'b.ts', 'c.ts']])
  })

  it('places every room on a floor, and no file imports from a floor above its own', () => {
    const unplaced = [...graph.keys()].filter((f) => floorOf(f) < 0)
    expect(unplaced).toEqual([])
    const upward = [...graph].flatMap(([file, imports]) => imports.filter((target) => floorOf(target) > floorOf(file)).map((target) => `${file} -> ${target}`))
    expect(upward).toEqual([])
  })

  it('keeps HTTP out of the services: only route files of a service room import http/errors.ts (services throw domain errors)', () => {
    const services = new Set(FLOORS[4])
    const offenders = [...graph]
      .filter(([file, imports]) => services.has(file.split('/')[0]!) && !/routes\.ts$/.test(file) && imports.includes('http/errors.ts'))
      .map(([file]) => file)
    expect(offenders).toEqual([])
  })

  it('loads only its shell and its router in the health function: at most 40 modules, no chat, AI or PDF code', () => {
    const out = execFileSync(join(root, 'node_modules/.bin/deno'), ['info', '--json', 'supabase/functions/health/index.ts'], {
      cwd: root,
      encoding: 'utf8',
      maxBuffer: 64 * 1024 * 1024,
    })
    type Dep = { code?: { specifier: string } }
    const graph = JSON.parse(out) as { roots: string[]; redirects: Record<string, string>; modules: { specifier: string; dependencies?: Dep[] }[] }
    const name = (specifier: string) => specifier.replace(`file://${root}`, '')
    // what runs: the modules reached through code imports; Deno's graph also lists declaration files and
    // modules reached only through `import type`, which type-checking reads and the isolate never loads
    const bySpecifier = new Map(graph.modules.map((m) => [m.specifier, m]))
    const loaded = new Set<string>()
    const pending = [...graph.roots]
    while (pending.length > 0) {
      const specifier = pending.pop()!
      if (loaded.has(specifier)) continue
      loaded.add(specifier)
      for (const dep of bySpecifier.get(specifier)?.dependencies ?? []) {
        if (dep.code) pending.push(graph.redirects[dep.code.specifier] ?? dep.code.specifier)
      }
    }
    const modules = [...loaded].map(name)
    expect(modules.length).toBeLessThanOrEqual(40)
    expect(modules.filter((m) => /functions-shared\/(chat|ai|pdf|catalogue|ingestion)\/|node_modules\/(openai|pdfjs-dist)\//.test(m))).toEqual([])
    // what type-checking alone reads of those rooms: the ports Deps names (interfaces, no imports of their own)
    const ports = new Set(['functions-shared/ai/provider.ts', 'functions-shared/pdf/ocr-port.ts', 'functions-shared/pdf/types.ts'])
    const typeOnly = graph.modules.filter((m) => !loaded.has(m.specifier)).map((m) => name(m.specifier))
    expect(typeOnly.filter((m) => !ports.has(m) && /functions-shared\/(chat|ai|pdf|catalogue|ingestion)\/|node_modules\/(openai|pdfjs-dist)\//.test(m)))
      .toEqual([])
  })
})
