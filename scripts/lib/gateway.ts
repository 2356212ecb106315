// The local gateway: one Node server that serves every router under /functions/v1 (as Supabase does)
// and reserves /auth/v1 for the local auth server.
import { serve, type ServerType } from '@hono/node-server'
import type { AddressInfo } from 'node:net'
import type { Config } from '../../functions-shared/config.ts'
import type { Sql } from '../../functions-shared/db/client.ts'
import { createApp } from '../../functions-shared/app.ts'
import { createDeps, type Deps } from '../../functions-shared/deps.ts'
import { readAssetNode, remoteAddressNode } from './node-adapter.ts'

export const FUNCTIONS_BASE = '/functions/v1'

export interface Gateway {
  url: string
  deps: Deps
  server: ServerType
  /** stops accepting, lets in-flight requests finish (up to timeoutMs), then closes what is left */
  close(timeoutMs?: number): Promise<void>
}

export async function startGateway(options: { config: Config; sql: Sql; port?: number; deps?: Partial<Deps> }): Promise<Gateway> {
  const deps = createDeps(options.config, { sql: options.sql, remoteAddress: remoteAddressNode, readAsset: readAssetNode, ...options.deps })
  const app = createApp(deps, { basePath: FUNCTIONS_BASE })
  const server = await new Promise<ServerType>((resolve, reject) => {
    const s = serve({ fetch: app.fetch, port: options.port ?? options.config.PORT, hostname: options.config.HOST }, () => resolve(s))
    s.once('error', reject)
  })
  const { port } = server.address() as AddressInfo
  return {
    url: `http://${options.config.HOST}:${port}`,
    deps,
    server,
    close: (timeoutMs = options.config.SHUTDOWN_TIMEOUT_MS) =>
      new Promise<void>((resolve) => {
        const force = setTimeout(() => {
          const s = server as { closeAllConnections?: () => void }
          s.closeAllConnections?.()
        }, timeoutMs)
        server.close(() => {
          clearTimeout(force)
          resolve()
        })
        const s = server as { closeIdleConnections?: () => void }
        s.closeIdleConnections?.()
      }),
  }
}
