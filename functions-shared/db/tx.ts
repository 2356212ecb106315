// The two ways every query runs. asUser does what PostgREST does for a request with a user JWT, so the
// RLS policies of the migrations are what guard user-owned rows; asService is the backend's privileged
// work, as the service_role (which has BYPASSRLS).
import type { Sql, Tx } from './client.ts'
import { DomainError, type DomainErrorCode } from '../domain/errors.ts'

export type Claims = Record<string, unknown> & { sub: string }

export async function asUser<T>(sql: Sql, claims: Claims, fn: (tx: Tx) => Promise<T>): Promise<T> {
  return asRole(sql, 'authenticated', claims, fn)
}

/** A transaction as PostgREST runs a request: `role` and `request.jwt.claims` set for it alone. */
export async function asRole<T>(sql: Sql, role: string, claims: Record<string, unknown>, fn: (tx: Tx) => Promise<T>): Promise<T> {
  const json = JSON.stringify({ ...claims, role })
  return (await sql.begin(async (tx) => {
    await tx`select set_config('role', ${role}, true), set_config('request.jwt.claims', ${json}, true)`
    return fn(tx)
  })) as T
}

export async function asService<T>(sql: Sql, fn: (tx: Tx) => Promise<T>): Promise<T> {
  return (await sql.begin(async (tx) => {
    // pipelined: the role switch goes out with the first statement of fn, not a round trip before it
    // (queries on one transaction run in order; if the switch failed, so does everything after it)
    const switched = tx`select set_config('role', 'service_role', true), set_config('request.jwt.claims', '{"role":"service_role"}', true)`
    switched.catch(() => {})
    const result = await fn(tx)
    await switched
    return result
  })) as T
}

/** True when the error is PostgreSQL's, with this SQLSTATE. */
export function isPgError(err: unknown, code?: string): err is Error & { code: string } {
  return err instanceof Error && typeof (err as { code?: unknown }).code === 'string' &&
    (code === undefined || (err as unknown as { code: string }).code === code)
}

/**
 * Maps the stable SQLSTATEs our RPCs raise (PT400, PT402, PT404, PT409, PT422) to domain errors; a JSON
 * object in the error's DETAIL becomes the error's details.
 */
export function fromRpcError(err: unknown): unknown {
  if (!isPgError(err)) return err
  const code = ({
    PT400: 'validation_failed',
    PT402: 'insufficient_balance',
    PT404: 'not_found',
    PT409: 'conflict',
    PT422: 'idempotency_key_reused',
  } as Record<string, DomainErrorCode>)[err.code]
  if (!code) return err
  return new DomainError(code, err.message, detailsOf((err as { detail?: unknown }).detail), { cause: err })
}

function detailsOf(detail: unknown): Record<string, unknown> {
  if (typeof detail !== 'string' || !detail.startsWith('{')) return {}
  try {
    const parsed = JSON.parse(detail) as unknown
    return parsed && typeof parsed === 'object' && !Array.isArray(parsed) ? (parsed as Record<string, unknown>) : {}
  } catch {
    return {}
  }
}
