// Typed context variables, shared by every middleware and handler.
import type { Logger } from '../lib/logger.ts'
import type { Principal } from './auth.ts'

declare module 'hono' {
  interface ContextVariableMap {
    requestId: string
    log: Logger
    principal: Principal
  }
}
