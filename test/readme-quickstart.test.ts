// The app developers' quickstart (docs/app-developers.md), run word for word: the code block between its
// quickstart markers, as a Node program with the .env lines `npm run status -- -o env` gives, against a
// gateway with the demo portal.
import { spawn } from 'node:child_process'
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createTestDatabase, type TestDatabase } from './helpers/db.ts'
import { testConfig } from './helpers/app.ts'
import { startGateway, type Gateway } from '../scripts/lib/gateway.ts'
import { createLogRoot } from '../functions-shared/lib/logger.ts'
import { stackStatus, statusEnv } from '../scripts/lib/status.ts'

const root = new URL('..', import.meta.url).pathname
let db: TestDatabase
let gw: Gateway
let dataDir: string

beforeAll(async () => {
  db = await createTestDatabase()
  dataDir = await mkdtemp(join(tmpdir(), 'ct-quickstart-'))
  gw = await startGateway({
    config: testConfig({ LOG_LEVEL: 'silent', DEMO_PORTAL: 'on', DATA_DIR: dataDir, EXPIRY_INTERVAL_SECONDS: '0', PORT: '0' }),
    sql: db.sql,
    port: 0,
    deps: { logs: createLogRoot({ level: 'silent' }) },
  })
})
afterAll(async () => {
  await gw?.close()
  await db?.close()
  await rm(dataDir, { recursive: true, force: true })
})

describe('the app developers\' quickstart (docs/app-developers.md)', () => {
  it('signs up, reads the profile through /rest/v1, invokes functions and streams a chat turn', async () => {
    const readme = await readFile(join(root, 'docs', 'app-developers.md'), 'utf8')
    const block = /<!-- quickstart:start -->\n```js\n([\s\S]*?)```\n<!-- quickstart:end -->/.exec(readme)?.[1]
    expect(block, 'the quickstart block').toBeDefined()
    // inside the repository, so `@supabase/supabase-js` resolves as in an app that installed it
    const dir = join(root, 'node_modules', '.cache', 'readme-quickstart')
    await mkdir(dir, { recursive: true })
    const file = join(dir, `quickstart-${process.pid}.mjs`)
    await writeFile(file, block!)
    const env = Object.fromEntries(
      statusEnv(await stackStatus(gw.deps.config, { base: gw.url }))
        .split('\n')
        .map((line) => /^(\w+)="(.*)"$/.exec(line)!.slice(1, 3) as [string, string]),
    )
    const child = spawn(join(root, 'node_modules/.bin/node'), [file], { env: { PATH: process.env.PATH ?? '', ...env }, stdio: ['ignore', 'pipe', 'pipe'] })
    let out = ''
    let err = ''
    child.stdout.on('data', (d) => (out += d))
    child.stderr.on('data', (d) => (err += d))
    const code = await new Promise<number | null>((resolve) => child.once('exit', resolve))
    await rm(file, { force: true })
    expect(code, `${out}\n${err}`).toBe(0)
    expect(out).toMatch(/profile \{\s+id: '[0-9a-f-]{36}',\s+full_name: 'Mariem',\s+role: 'student'\s+\}/)
    expect(out).toContain('textbooks 0')
    expect(out).toMatch(/sync completed \d+ found/)
    expect(out).toMatch(/\ndone \{\s+estimated: \d+/)
  }, 120_000)
})
