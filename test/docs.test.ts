// The documentation holds together: the README stays a front door, every relative link of the README and
// docs/ reaches a file and, with an anchor, a heading of it; every `spec §n` the code cites is a section
// of docs/contract.md.
import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { dirname, join, relative } from 'node:path'
import { describe, expect, it } from 'vitest'

const root = new URL('..', import.meta.url).pathname
const files = ['README.md', ...readdirSync(join(root, 'docs')).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`)]
const read = (file: string) => readFileSync(join(root, file), 'utf8')
/** GitHub's anchor of a heading: lower case, punctuation dropped (letters, digits, _ and - kept), spaces to dashes. */
const slug = (heading: string) => heading.trim().toLowerCase().replace(/[^\p{L}\p{N}\s_-]/gu, '').replace(/\s/g, '-')
const anchors = (file: string) => new Set([...read(file).replace(/```[\s\S]*?```/g, '').matchAll(/^#{1,6} (.+)$/gm)].map((m) => slug(m[1]!)))

describe('the documentation', () => {
  it('keeps the README a front door (at most 200 lines)', () => {
    expect(read('README.md').split('\n').length).toBeLessThanOrEqual(200)
  })

  it('has every relative link reach a file, and every anchor a heading', () => {
    const broken: string[] = []
    let checked = 0
    for (const file of files) {
      const text = read(file).replace(/```[\s\S]*?```/g, '')
      for (const [, target] of text.matchAll(/\]\(([^)\s]+)\)/g)) {
        if (/^[a-z]+:/i.test(target!)) continue
        checked++
        const [path, anchor] = target!.split('#') as [string, string | undefined]
        const resolved = path === '' ? file : relative(root, join(root, dirname(file), path))
        if (!existsSync(join(root, resolved))) broken.push(`${file}: ${target} (no ${resolved})`)
        else if (anchor && resolved.endsWith('.md') && !anchors(resolved).has(anchor)) broken.push(`${file}: ${target} (no heading #${anchor} in ${resolved})`)
      }
    }
    expect(broken).toEqual([])
    expect(checked).toBeGreaterThan(30)
  })

  it('has a section of docs/contract.md for every `spec §n` the code cites', () => {
    const contract = anchors('docs/contract.md')
    const sections = [...contract].map((a) => /^(\d+)-/.exec(a)?.[1]).filter((x): x is string => x !== undefined)
    const cited = new Set<string>()
    const walk = (dir: string) => {
      for (const entry of readdirSync(join(root, dir), { withFileTypes: true })) {
        const path = `${dir}/${entry.name}`
        if (entry.isDirectory()) walk(path)
        else if (/\.(ts|sql)$/.test(entry.name)) { for (const m of read(path).matchAll(/spec §(\d+(?:\.\d+)?)/g)) cited.add(m[1]!) }
      }
    }
    for (const dir of ['functions-shared', 'scripts', 'supabase', 'test']) walk(dir)
    expect(cited.size).toBeGreaterThan(10)
    const missing = [...cited].filter((n) => !sections.includes(n.replace('.', '')))
    expect(missing).toEqual([])
  })
})

describe('what the local /rest/v1 serves, as docs/app-developers.md lists it', () => {
  const section = (() => {
    const doc = read('docs/app-developers.md')
    return doc.slice(doc.indexOf('### `/rest/v1` locally'), doc.indexOf('**Closed by default.**'))
  })()
  it('names every operator the parser reads, every preference it honours and every media type it answers', async () => {
    const { OPERATORS } = await import('../local-platform/rest/parse.ts')
    const { KNOWN } = await import('../local-platform/rest/prefs.ts')
    const operators = section.slice(section.indexOf('**operators**'), section.indexOf('**logic trees**'))
    for (const op of OPERATORS) expect(operators, op).toMatch(new RegExp(`[\\s\`]${op}[\\s\`]`))
    for (const pref of Object.keys(KNOWN).filter((p) => p !== 'return=headers-only')) {
      const [key, value] = pref.split('=') as [string, string]
      expect(section, pref).toMatch(new RegExp(`${key}=[^\`]*\\b${value}\\b`))
    }
    expect(section).toContain('return=headers-only')
    for (const media of ['`.single()`', 'nulls=stripped', 'text/csv', 'PGRST107']) expect(section).toContain(media)
  })
})

describe('what the local /auth/v1 serves, as docs/app-developers.md lists it', () => {
  const section = (() => {
    const doc = read('docs/app-developers.md')
    return doc.slice(doc.indexOf('### `/auth/v1` locally'), doc.indexOf('### `/rest/v1` locally'))
  })()
  // every route the local auth server registers (its mailbox, served at /mail, aside)
  const routes = readdirSync(new URL('../local-platform/auth/', import.meta.url))
    .filter((f) => f.endsWith('.ts') && f !== 'mailbox.ts')
    .flatMap((f) => {
      const source = read(`local-platform/auth/${f}`)
      const single = [...source.matchAll(/app\.(get|post|put|delete|patch|all)\(\s*'([^']+)'/g)].map((m) => [m[1]!, m[2]!] as const)
      const looped = [...source.matchAll(/for \(const path of \[([^\]]+)\]\)\s*\{?\s*app\.all/g)].flatMap((m) =>
        [...m[1]!.matchAll(/'([^']+)'/g)].map((p) => ['all', p[1]!] as const)
      )
      return [...single, ...looped]
    })
  it('names every route it serves with its method, and every path it answers as turned off', () => {
    expect(routes.length).toBeGreaterThan(40)
    const served = section.slice(section.indexOf('- served:'), section.indexOf('- answered as'))
    const off = section.slice(section.indexOf('- answered as'), section.indexOf('- any other path'))
    for (const [method, path] of routes) {
      if (method === 'all') expect(off, path).toContain(`\`${path.replace(/\/\*$/, '')}`)
      else expect(served, `${method} ${path}`).toContain(`\`${method.toUpperCase()} ${path}\``)
    }
    // and nothing served that the code does not register
    const listed = [...served.matchAll(/`(GET|POST|PUT|DELETE|PATCH) ([^`]+)`/g)].map((m) => `${m[1]!.toLowerCase()} ${m[2]!}`)
    expect(listed.filter((r) => !routes.some(([m, p]) => `${m} ${p}` === r))).toEqual([])
  })
})
