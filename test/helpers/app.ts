// The real app over a real database, with a fake clock and captured logs.
import { GoTrueError, goTrueErrorResponse } from '../../local-platform/auth/errors.ts'
import { type Config, loadConfig } from '../../functions-shared/config.ts'
import { OpenAPIHono } from '@hono/zod-openapi'
import { type AppOptions, createApp, withCommonMiddleware } from '../../functions-shared/app.ts'
import { localAuthRouter } from '../../local-platform/auth/routes.ts'
import { TRUSTED_CALLER } from '../../local-platform/auth/rate-limits.ts'
import { createSupabaseClients } from '../../functions-shared/identity/supabase.ts'
import { createDeps, type Deps } from '../../functions-shared/deps.ts'
import type { Sql } from '../../functions-shared/db/client.ts'
import { FakeClock } from '../../functions-shared/lib/clock.ts'
import { createLogRoot } from '../../functions-shared/lib/logger.ts'
import { readAssetNode } from '../../scripts/lib/node-adapter.ts'
import { createAiProvider } from '../../functions-shared/ai/select.ts'

/** Settings as the service would parse them from this environment only (the shell's is ignored). */
export function testConfig(env: Record<string, string> = {}): Config {
  // the suite's students all come from one address: the welcome bonus's per-address cap has its own tests
  return loadConfig({ LOG_LEVEL: 'debug', WELCOME_BONUS_DAILY_PER_ADDRESS: '0', ...env })
}

export class LogCapture {
  readonly raw: string[] = []
  write(line: string): void {
    this.raw.push(line)
  }
  get lines(): Record<string, unknown>[] {
    return this.raw.map((l) => JSON.parse(l) as Record<string, unknown>)
  }
  text(): string {
    return this.raw.join('')
  }
}

export interface TestApp {
  app: OpenAPIHono
  deps: Deps
  clock: FakeClock
  logs: LogCapture
  request(path: string, init?: RequestInit): Promise<Response>
  /** the local auth server (/auth/v1/...), in process */
  auth: OpenAPIHono
}

export function createTestApp(options: { sql: Sql; env?: Record<string, string>; deps?: Partial<Deps>; app?: AppOptions }): TestApp {
  // starts at the real time, because tokens signed by the helpers carry real iat/exp
  const clock = new FakeClock(Date.now())
  const logs = new LogCapture()
  const config = testConfig({ AUTH_BCRYPT_COST: '4', ...options.env })
  // The local auth server, in process: supabase-js (the real client) reaches it through this fetch.
  // deno-lint-ignore prefer-const -- authFetch, made before the auth server, reads it once it is set
  let auth: OpenAPIHono | undefined
  const authFetch: typeof fetch = async (input, init) => auth!.fetch(new Request(input, init), { [TRUSTED_CALLER]: true })
  const deps = createDeps(config, {
    supabase: createSupabaseClients({ ...config, SUPABASE_URL: 'http://127.0.0.1:54321' }, authFetch),
    sql: options.sql,
    ai: createAiProvider(config),
    clock,
    logs: createLogRoot({ level: config.LOG_LEVEL, destination: logs }),
    readAsset: readAssetNode,
    remoteAddress: () => '203.0.113.7',
    // as the gateway: the auth server's paths answer the shell's refusals in GoTrue's shape
    foreignError: (c, status, code, message) => (c.req.path.startsWith('/auth/v1/') ? goTrueErrorResponse(new GoTrueError(status, code, message), c) : null),
    ...options.deps,
  })
  const app = createApp(deps, options.app)
  auth = withCommonMiddleware(new OpenAPIHono(), deps, (a) => a.route('/auth/v1', localAuthRouter(deps)))
  return { app, deps, clock, logs, auth, request: async (path, init) => app.request(path, init) }
}

/** The body as JSON, with the whole response in the message when it is not JSON. */
export async function json(res: Response): Promise<Record<string, any>> {
  const text = await res.text()
  try {
    return JSON.parse(text) as Record<string, any>
  } catch {
    throw new Error(`expected JSON, got ${res.status} ${res.headers.get('content-type')}: ${text.slice(0, 500)}`)
  }
}
