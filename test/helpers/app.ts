// The real app over a real database, with a fake clock and captured logs.
import type { OpenAPIHono } from '@hono/zod-openapi'
import { loadConfig, type Config } from '../../functions-shared/config.ts'
import { createApp, type AppOptions } from '../../functions-shared/app.ts'
import { createDeps, type Deps } from '../../functions-shared/deps.ts'
import type { Sql } from '../../functions-shared/db/client.ts'
import { FakeClock } from '../../functions-shared/lib/clock.ts'
import { createLogRoot } from '../../functions-shared/lib/logger.ts'
import { readAssetNode } from '../../scripts/lib/node-adapter.ts'

/** Settings as the service would parse them from this environment only (the shell's is ignored). */
export function testConfig(env: Record<string, string> = {}): Config {
  return loadConfig({ LOG_LEVEL: 'debug', ...env })
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
}

export function createTestApp(options: { sql: Sql; env?: Record<string, string>; deps?: Partial<Deps>; app?: AppOptions }): TestApp {
  // starts at the real time, because tokens signed by the helpers carry real iat/exp
  const clock = new FakeClock(Date.now())
  const logs = new LogCapture()
  const config = testConfig(options.env)
  const deps = createDeps(config, {
    sql: options.sql,
    clock,
    logs: createLogRoot({ level: config.LOG_LEVEL, destination: logs }),
    readAsset: readAssetNode,
    remoteAddress: () => '203.0.113.7',
    ...options.deps,
  })
  const app = createApp(deps, options.app)
  return { app, deps, clock, logs, request: async (path, init) => app.request(path, init) }
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
