// JSON logs, one line per event: timestamp (ISO 8601), level (a word), logger, message, request_id.
import { type DestinationStream, type Logger as PinoLogger, pino } from 'pino'

export type Logger = PinoLogger
export type LogLevel = 'trace' | 'debug' | 'info' | 'warn' | 'error' | 'fatal' | 'silent'

/** Keys whose values are never written, at the top level or one object deep. */
const SECRET_KEYS = [
  'password',
  'new_password',
  'token',
  'access_token',
  'refresh_token',
  'authorization',
  'apikey',
  'api_key',
  'admin_key',
  'x-admin-key',
  'secret',
  'jwt',
  'service_role_key',
  'cookie',
]
const redactPaths = SECRET_KEYS.flatMap((k) => [`["${k}"]`, `*["${k}"]`])

function stdoutStream(): DestinationStream {
  const g = globalThis as { process?: { stdout?: { write(s: string): unknown } } }
  const out = g.process?.stdout
  if (out) return { write: (line: string) => void out.write(line) }
  return { write: (line: string) => console.log(line.trimEnd()) }
}

export interface LogRoot {
  /** A named logger for work outside any request (request_id is null). */
  get(name: string): Logger
  /** A named logger bound to one request. */
  forRequest(name: string, requestId: string): Logger
}

export function createLogRoot(options: { level?: LogLevel; destination?: DestinationStream } = {}): LogRoot {
  const root = pino(
    {
      level: options.level ?? 'info',
      base: undefined,
      messageKey: 'message',
      timestamp: () => `,"timestamp":"${new Date().toISOString()}"`,
      formatters: { level: (label) => ({ level: label }) },
      redact: { paths: redactPaths, censor: '[redacted]' },
    },
    options.destination ?? stdoutStream(),
  )
  const named = new Map<string, Logger>()
  return {
    get(name) {
      let logger = named.get(name)
      if (!logger) named.set(name, logger = root.child({ logger: name, request_id: null }))
      return logger
    },
    forRequest(name, requestId) {
      return root.child({ logger: name, request_id: requestId })
    },
  }
}
