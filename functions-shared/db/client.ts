// One postgres.js client per process. The embedded database is a single connection; a server gets a
// small pool (throughput on 2 cores falls beyond ~8 connections).
import postgres from 'postgres'

export type Sql = postgres.Sql
export type Tx = postgres.TransactionSql

/** The one row of a list's `select count(*)::int as total` (an int, where a bare count(*) is a bigint string). */
export interface TotalRow {
  total: number
}

export interface DbOptions {
  max: number
  prepare: boolean
  statementTimeoutMs?: number
  applicationName?: string
  /** told of each statement sent (its text): what a request costs in round trips, counted by tests */
  onStatement?: (query: string) => void
}

export function createDb(url: string, options: DbOptions): Sql {
  return postgres(url, {
    max: options.max,
    prepare: options.prepare,
    idle_timeout: 60,
    connect_timeout: 10,
    onnotice: () => {},
    ...(options.onStatement ? { debug: (_connection: number, query: string) => options.onStatement!(query) } : {}),
    connection: {
      application_name: options.applicationName ?? 'curriculum-tutor',
      ...(options.statementTimeoutMs ? { statement_timeout: options.statementTimeoutMs } : {}),
    },
  })
}
