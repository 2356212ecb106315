// The newcomer's first hour: `npm run demo` as a process (starting its own stack on the embedded
// database, twice on the same data), the demo portal as the gateway serves it, and the operator CLI
// (`npm run admin -- ...`) as processes against a gateway on loopback.
import { spawn } from 'node:child_process'
import { mkdtemp, readFile, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createTestDatabase, type TestDatabase } from './helpers/db.ts'
import { testConfig } from './helpers/app.ts'
import { type Gateway, startGateway } from '../scripts/lib/gateway.ts'
import { createLogRoot } from '../functions-shared/lib/logger.ts'
import { extractPdf } from '../functions-shared/pdf/extract.ts'
import { canonicalize } from '../functions-shared/text/canonicalize.ts'
import { CURRICULUM_FILE } from '../scripts/lib/demo-portal.ts'

const root = new URL('..', import.meta.url).pathname
const dirs: string[] = []
afterAll(async () => Promise.all(dirs.map((d) => rm(d, { recursive: true, force: true }))))
const tempDir = async () => {
  const d = await mkdtemp(join(tmpdir(), 'ct-demo-'))
  dirs.push(d)
  return d
}

function run(
  script: string,
  args: string[],
  env: Record<string, string>,
  timeoutMs = 110_000,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(`${root}node_modules/.bin/node`, [script, ...args], {
    cwd: root,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/tmp', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let stdout = ''
  let stderr = ''
  child.stdout.on('data', (d) => (stdout += d))
  child.stderr.on('data', (d) => (stderr += d))
  return new Promise((resolve) => {
    let timedOut = false
    const timer = setTimeout(() => {
      timedOut = true
      child.kill('SIGKILL')
    }, timeoutMs)
    child.once('close', (code, signal) => {
      clearTimeout(timer)
      // after its output is read to the end; a command ended by a signal says which (and whether it was
      // this runner's time limit) in its stderr
      resolve({ code, stdout, stderr: signal ? `${stderr}\n[ended by ${signal}${timedOut ? `: over ${timeoutMs} ms` : ''}]` : stderr })
    })
  })
}

describe('npm run demo', () => {
  it('runs the whole mission on a stack of its own, and again on the same data', async () => {
    const dataDir = await tempDir()
    // its own deadline and the kill leave room for a machine busy with the rest of the suite
    const env = { DATA_DIR: dataDir, PORT: '0', DB_PORT: '0', LOG_LEVEL: 'warn', DEMO_TIMEOUT_MS: '200000' }
    const first = await run('scripts/demo.ts', [], env, 220_000)
    expect(first.code, `${first.stdout}\n${first.stderr}`).toBe(0)
    const out = first.stdout
    expect(out).toContain('No stack is running: starting one on the embedded database')
    expect(out).toContain('accounts     admin admin@demo.mr, student eleve@demo.mr (created;')
    expect(out).toMatch(/sync {9}run [0-9a-f-]+: completed; found 29, new 27, duplicates 1, quality failures 1, errors 0/)
    expect(out).toContain('ingest       27 reference(s) queued')
    expect(out).toContain('[####################] 27/27 done  ready 27')
    expect(out).toContain('catalogue    27 textbook(s) ready')
    expect(out).toContain('[ar] 4AS education-islamique')
    // the French and the Arabic question, answered from the right textbooks with page links
    expect(out).toMatch(
      /\(answer, fr, subject mathematiques, 15 tokens reserved\)\n {2}\[1\] Mathématiques 4AS — Équations du premier degré p\.\d .*equations-premier-degre\.pdf#page=\d/,
    )
    expect(out).toMatch(/\(answer, ar, subject education-islamique, 15 tokens reserved\)\n {2}\[1\] التربية الإسلامية 4AS — أركان الإسلام/)
    expect(out).toContain('الإسلام مبني على خمسة أركان') // extracted in reading order, quoted as written (hamzas kept)
    expect(out.match(/→ answered \(extractive/g)).toHaveLength(2)
    expect(out).toMatch(/wallet {7}\d+ tokens, tier free, 2 turn\(s\) today/)
    expect(out).toMatch(/ -15 {2}reservation_hold/)
    expect(out).toMatch(/agent_chat/)
    // the mission fits in the admin's rate limit (60 requests a minute): it never waits out a 429
    expect(out).not.toContain('rate limit ')
    // it says how long it took (its time is measured where figures belong, not asserted here)
    expect(out).toMatch(/demo finished in [\d.]+ s/)

    // a second run on the same data: nothing new (the portal is on another port this time, so its URLs
    // are new and the documents are recognised by their content), the questions are answered again
    const second = await run('scripts/demo.ts', [], env, 220_000)
    expect(second.code, `${second.stdout}\n${second.stderr}`).toBe(0)
    expect(second.stdout).toMatch(/found 29, new 0, duplicates 28, quality failures 1, errors 0/)
    expect(second.stdout).toContain('ingest       0 reference(s) queued (everything was ingested by an earlier run)')
    expect(second.stdout.match(/→ answered/g)).toHaveLength(2)
    // the same accounts, signed in again; the student's spent tokens made up for this run
    expect(second.stdout).toContain('accounts     admin admin@demo.mr, student eleve@demo.mr (from an earlier run;')
    expect(second.stdout).toContain('wallet       topped up to 50 tokens for this run')
    expect(second.stdout).toMatch(/wallet {7}\d+ tokens, tier free, 4 turn\(s\) today/)
  }, 240_000)

  it('exits non-zero with the reason when the stack it is pointed at is not there', async () => {
    const r = await run('scripts/demo.ts', [], { DEMO_URL: 'http://127.0.0.1:9', LOG_LEVEL: 'warn' }, 30_000)
    expect(r.code).toBe(1)
    expect(r.stderr).toContain('demo failed:')
  }, 40_000)
})

describe('the demo portal and the operator CLI against a running gateway', () => {
  let db: TestDatabase
  let gw: Gateway
  let env: Record<string, string>
  const admin = (...args: string[]) => run('scripts/admin.ts', args, env, 60_000)
  const json = async (...args: string[]) => {
    const r = await admin(...args, '--json')
    expect(r.code, `${r.stdout}\n${r.stderr}`).toBe(0)
    return JSON.parse(r.stdout) as Record<string, any>
  }
  beforeAll(async () => {
    db = await createTestDatabase()
    const config = testConfig({
      LOG_LEVEL: 'silent',
      DEMO_PORTAL: 'on',
      DATA_DIR: await tempDir(),
      EXPIRY_INTERVAL_SECONDS: '0',
      PORT: '0',
      ADMIN_API_KEY: 'cli-admin-key',
    })
    gw = await startGateway({ config, sql: db.sql, port: 0, deps: { logs: createLogRoot({ level: 'silent' }) } })
    // the gateway's data folder, which has no JWT secret of its own: the CLI signs with the config's, as
    // the gateway does, whatever a stack started in the repository left in .data
    env = { CT_URL: gw.url, LOG_LEVEL: 'warn', DATA_DIR: config.DATA_DIR }
  })
  afterAll(async () => {
    await gw?.close()
    await db?.close()
  })

  it('serves paginated listings and real PDFs generated from demo/curriculum.json', async () => {
    const page1 = await (await fetch(`${gw.url}/demo-portal/programmes/page1.html`)).text()
    expect(page1).toContain('rel="next" href="page2.html"')
    const links = [...page1.matchAll(/href="(\/demo-portal\/fichiers\/[^"]+)"/g)].map((m) => m[1]!)
    expect(links).toHaveLength(5)
    const pdf = await fetch(`${gw.url}${links[0]}`)
    expect(pdf.headers.get('content-type')).toBe('application/pdf')
    const extracted = await extractPdf(new Uint8Array(await pdf.arrayBuffer()), { deadlineMs: 30_000 })
    expect(extracted.pages[0]!.text).toContain('les équations du premier degré')
    expect((await fetch(`${gw.url}/demo-portal/fichiers/absent.pdf`)).status).toBe(404)
    expect((await fetch(`${gw.url}/demo-portal/programmes/page9.html`)).status).toBe(404)
  })

  it('runs the operator commands: sync, references, ingest, watch, jobs, users, roles, top-up, requeue, stats', async () => {
    expect((await json('sources')).sources).toContain('demo')
    const sync = await json('sync', 'demo')
    expect(sync).toMatchObject({ status: 'completed', found_count: 29, new_count: 27, duplicates: 1, quality_failed: 1 })
    const refs = await json('references', '--source', 'demo', '--status', 'discovered')
    expect(refs.total).toBe(27)
    const queued = await json('ingest', '--all', '--source', 'demo')
    expect(queued.queued).toHaveLength(27)
    // the watch drives the twenty-seven jobs (two of them scans, read by OCR): a few seconds alone, longer
    // beside the rest of the suite, so it gets a limit of its own. It spares the admin rate limit (the job
    // list once a second at most while it dispatches; looks that only watch paced below half the limit),
    // so the commands after it are not made to wait out a 429.
    const started = Date.now()
    const watch = await run('scripts/admin.ts', ['watch', '--dispatch', '--interval', '100', '--json'], env, 200_000)
    console.log(`watch --dispatch: 27 jobs ready in ${((Date.now() - started) / 1000).toFixed(1)} s`)
    expect(watch.code, `${watch.stderr}\n${watch.stdout.slice(-2000)}`).toBe(0)
    const last = JSON.parse(watch.stdout.trim().split('\n').at(-1)!)
    expect(last).toMatchObject({ counts: { ready: 27 }, active: [] })
    expect((await json('jobs', '--status', 'ready')).total).toBe(27)
    // the Arabic lessons are stored as demo/curriculum.json writes them: every chunk is a piece of its
    // page's text, letters, hamzas and punctuation included, and every page's text is stored whole
    const curriculum = JSON.parse(await readFile(CURRICULUM_FILE, 'utf8')) as {
      lessons: { path: string; language?: string; pages?: string[]; scanned?: boolean }[]
    }
    const arabic = curriculum.lessons.filter((l) => l.language === 'ar' && l.pages && !l.scanned)
    expect(arabic.length).toBeGreaterThanOrEqual(4)
    for (const lesson of arabic) {
      const chunks = await db.sql`select c.page_number, c.chunk_index, c.content from public.document_chunks c join public.documents d on d.id = c.file_id
                                   join public.curriculum_references r on r.id = d.reference_id where r.pdf_source like ${`%${lesson.path}`} order by 1, 2`
      expect(new Set(chunks.map((c) => c.page_number))).toEqual(new Set(lesson.pages!.map((_, i) => i + 1)))
      for (const c of chunks) expect(canonicalize(lesson.pages![(c.page_number as number) - 1]!)).toContain(c.content)
      for (const [i, page] of lesson.pages!.entries()) {
        const stored = chunks.filter((c) => c.page_number === i + 1).map((c) => c.content as string)
        expect(stored.join(' ').length).toBeGreaterThanOrEqual(canonicalize(page).length)
        expect(canonicalize(page).startsWith(stored[0]!)).toBe(true)
        expect(canonicalize(page).endsWith(stored.at(-1)!)).toBe(true)
      }
    }
    // the scanned lessons were read by OCR, every page of them
    for (const lesson of curriculum.lessons.filter((l) => l.scanned)) {
      const pages = await db.sql`select distinct (v.metadata->>'page_number')::int as page, v.metadata->>'text_source' as source from public.vectors v
                                  join public.documents d on d.id = v.file_id join public.curriculum_references r on r.id = d.reference_id
                                  where r.pdf_source like ${`%${lesson.path}`} order by 1`
      expect(pages).toEqual(lesson.pages!.map((_, i) => ({ page: i + 1, source: 'ocr' })))
    }
    expect((await json('dispatch')).status).toBe('idle')

    const created = await json('create-admin', 'chef@demo.mr', 'Tr3s-secret!', '--name', 'Chef')
    expect(created).toMatchObject({ email: 'chef@demo.mr', role: 'admin' })
    const human = await admin('users')
    expect(human.stdout).toMatch(/chef@demo\.mr +Chef +admin/)
    expect((await json('set-role', 'chef@demo.mr', 'teacher')).role).toBe('teacher')
    const top = await json('topup', 'chef@demo.mr', '100', '--amount', '250', '--method', 'bankily', '--idempotency-key', 'cli-1')
    expect(top).toMatchObject({ tokens: 100, new_balance: 150, replayed: false, payment_method: 'bankily' })
    expect(await json('topup', 'chef@demo.mr', '100', '--amount', '250', '--method', 'bankily', '--idempotency-key', 'cli-1')).toMatchObject({
      replayed: true,
      new_balance: 150,
    })
    const stats = await json('stats')
    expect(stats.documents).toMatchObject({ ready: 27 })

    const missing = await admin('requeue', crypto.randomUUID())
    expect(missing.code).toBe(1)
    expect(missing.stderr).toMatch(/404 not_found: .*\(request [0-9a-f-]+\)/)
    const nobody = await admin('topup', 'nobody@nowhere.mr', '10')
    expect(nobody.code).toBe(1)
    expect(nobody.stderr).toBe('admin: no account has the email nobody@nowhere.mr\n') // no usage text
    const unknown = await admin('frobnicate')
    expect(unknown.code).toBe(2)
    expect(unknown.stderr).toContain('unknown command frobnicate')
    const remote = await run('scripts/admin.ts', ['stats'], { CT_URL: 'https://example.supabase.co' }, 30_000)
    expect(remote.code).toBe(2)
    expect(remote.stderr).toContain('give --token')
    // the deprecated admin key works too, and a wrong one is refused
    const byKey = await run('scripts/admin.ts', ['stats', '--json', '--admin-key', 'cli-admin-key'], { CT_URL: gw.url }, 30_000)
    expect(byKey.code, byKey.stderr).toBe(0)
    expect(JSON.parse(byKey.stdout).documents.ready).toBe(27)
    const wrongKey = await run('scripts/admin.ts', ['stats'], { CT_URL: gw.url, ADMIN_API_KEY: 'wrong' }, 30_000)
    expect(wrongKey.code).toBe(1)
    expect(wrongKey.stderr).toContain('401')
    const badToken = await run('scripts/admin.ts', ['stats', '--token', 'nope'], { CT_URL: gw.url }, 30_000)
    expect(badToken.code).toBe(1)
    expect(badToken.stderr).toContain('401')
  }, 300_000)

  // after the operator commands, on the gateway they filled: the demo finds its lessons there and adds nothing
  it("lets the README's first hour be followed literally: the demo, then step 3's sign-up, sign-in and question", async () => {
    const demo = await run('scripts/demo.ts', [], { ...env, DEMO_URL: gw.url, DEMO_TIMEOUT_MS: '200000' }, 220_000)
    expect(demo.code, `${demo.stdout}\n${demo.stderr}`).toBe(0)
    // step 3 as the README writes it, against this gateway (the API's /auth takes 5 requests a minute per
    // address, and the demo spends none of them)
    const readme = await readFile(join(root, 'README.md'), 'utf8')
    const snippet = /3\. \*\*Ask a question yourself\*\*:\n {3}```sh\n([\s\S]*?)\n {3}```/.exec(readme)![1]!.replace(/^ {3}/gm, '').replaceAll(
      'http://127.0.0.1:54321',
      gw.url,
    )
    const shell = (script: string) =>
      new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
        const child = spawn('bash', ['-c', script], {
          cwd: root,
          env: { PATH: `${root}node_modules/.bin:${process.env.PATH ?? ''}`, HOME: process.env.HOME ?? '/tmp' },
        })
        let stdout = ''
        let stderr = ''
        child.stdout.on('data', (d: Buffer) => (stdout += d))
        child.stderr.on('data', (d: Buffer) => (stderr += d))
        child.on('close', (code) => resolve({ code, stdout, stderr }))
      })
    const step3 = await shell(snippet)
    expect(step3.code, step3.stderr).toBe(0)
    // the sign-up's JSON, then the answer's (curl -s adds no line break)
    const answer = JSON.parse(step3.stdout.slice(step3.stdout.lastIndexOf('}{') + 1)) as Record<string, any>
    expect(answer).toMatchObject({ path: 'answer', outcome: 'answered' })
    // and with a wrong password its sign-in line says why in a sentence, and the question is not sent
    const wrong = await shell(snippet.replaceAll('"password":"secret-123"}\' |', '"password":"not-it"}\' |'))
    expect(wrong.code).not.toBe(0)
    expect(wrong.stderr).toMatch(/^sign-in refused: /m)
    expect(wrong.stdout).not.toContain('"error":"unauthorized"')
  }, 250_000)
})

describe('the example sources file', () => {
  it('has the real portal and the demo portal; the demo source only where PUBLIC_URL is known', async () => {
    const { readFile } = await import('node:fs/promises')
    const { parseSources } = await import('../functions-shared/sources-file.ts')
    const text = await readFile(`${root}config/scraper-sources.json`, 'utf8')
    const local = parseSources(text, { PUBLIC_URL: 'http://127.0.0.1:54321', PUBLIC_HOST: '127.0.0.1:54321' })
    expect(local.map((s) => s.name)).toEqual(['education-mr', 'demo'])
    expect(local[1]).toMatchObject({ index_urls: ['http://127.0.0.1:54321/demo-portal/programmes/page1.html'], allowed_hosts: ['127.0.0.1:54321'] })
    const skipped: string[] = []
    const hosted = parseSources(text, {}, (name, reason) => skipped.push(`${name}: ${reason}`))
    expect(hosted.map((s) => s.name)).toEqual(['education-mr'])
    expect(skipped).toEqual(['demo: uses ${PUBLIC_URL}, which is not known here'])
    expect(() => parseSources(JSON.stringify({ sources: [{ ...JSON.parse(text).sources[0], pdf_pattern: '(' }] }))).toThrow(/invalid regular expression/)
  })
})
