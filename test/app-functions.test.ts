// An app's own Edge Functions on the local stack: every folder of FUNCTIONS_DIR with an index.ts is served
// at /functions/v1/<name> in a Deno process of its own, as `supabase functions serve` serves it, with
// verify_jwt as on Supabase (on unless config.toml turns it off); adding one needs no change to the
// service's code. The fixture project is test/fixtures/app-project.
import { createClient } from '@supabase/supabase-js'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createTestDatabase, type TestDatabase } from './helpers/db.ts'
import { testConfig } from './helpers/app.ts'
import { type Gateway, startGateway } from '../scripts/lib/gateway.ts'
import { discoverFunctions } from '../scripts/lib/app-functions.ts'
import { ROUTER_NAMES } from '../functions-shared/app.ts'
import { apiKey } from '../functions-shared/lib/keys.ts'
import { LOCAL_JWT_SECRET } from '../functions-shared/config.ts'
import { createLogRoot } from '../functions-shared/lib/logger.ts'

const FUNCTIONS_DIR = 'test/fixtures/app-project/supabase/functions'
const root = new URL('..', import.meta.url).pathname

let db: TestDatabase
let gateway: Gateway
let anonKey: string

beforeAll(async () => {
  db = await createTestDatabase()
  gateway = await startGateway({
    config: testConfig({ LOG_LEVEL: 'silent', FUNCTIONS_DIR }),
    sql: db.sql,
    port: 0,
    deps: { logs: createLogRoot({ level: 'silent' }) },
    onFunctionOutput: () => {},
  })
  anonKey = await apiKey(LOCAL_JWT_SECRET, 'anon')
}, 120_000)
afterAll(async () => {
  await gateway?.close(1000)
  await db?.close()
})

describe("an app's own functions", () => {
  it("are the folders with an index.ts, but the service's own, with verify_jwt from the config.toml beside them", () => {
    expect(discoverFunctions(root, FUNCTIONS_DIR, ROUTER_NAMES).map((f) => [f.name, f.verifyJwt])).toEqual([['hello', true], ['open', false]])
    expect(discoverFunctions(root, 'supabase/functions', ROUTER_NAMES)).toEqual([])
  })

  it("are invoked with supabase-js, the path from /<name> on, with the project's keys in their environment", async () => {
    const supabase = createClient(gateway.url, anonKey, { auth: { persistSession: false } })
    const { data, error } = await supabase.functions.invoke('hello', { body: { name: 'Aminetou' } })
    expect(error).toBeNull()
    expect(data).toEqual({ message: 'Salam, Aminetou', path: '/hello', method: 'POST', hasKeys: true })
    const get = await fetch(`${gateway.url}/functions/v1/hello/deeper?x=1`, { headers: { Authorization: `Bearer ${anonKey}` } })
    expect(await get.json()).toMatchObject({ message: 'Salam, world', path: '/hello/deeper', method: 'GET' })
  })

  it("verify a JWT of the project as Supabase's gateway does, unless verify_jwt is off", async () => {
    const bare = await fetch(`${gateway.url}/functions/v1/hello`)
    expect(bare.status).toBe(401)
    expect(await bare.json()).toEqual({ msg: 'Error: Missing authorization header' })
    const forged = await fetch(`${gateway.url}/functions/v1/hello`, { headers: { Authorization: 'Bearer eyJhbGciOiJIUzI1NiJ9.e30.x' } })
    expect(forged.status).toBe(401)
    expect(await forged.json()).toEqual({ msg: 'Invalid JWT' })
    const open = await fetch(`${gateway.url}/functions/v1/open`)
    expect(open.status).toBe(200)
    expect(await open.text()).toBe('open to all')
  })

  it("leave the service's functions as they are, and a folder without an index.ts is no function", async () => {
    expect((await fetch(`${gateway.url}/functions/v1/health`)).status).toBe(200)
    const notes = await fetch(`${gateway.url}/functions/v1/notes`, { headers: { Authorization: `Bearer ${anonKey}` } })
    expect(notes.status).toBe(404)
  })
})
