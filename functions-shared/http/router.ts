// Every router is an OpenAPIHono whose zod validation failures become our 400 body with the fields.
// Input that passed its schema is also checked for text PostgreSQL cannot store (NUL, unpaired
// surrogates) in any string of any target (body, query, path, form), so that every route refuses it with
// a 400 naming the field instead of failing later in the database.
import { OpenAPIHono, type z } from '@hono/zod-openapi'
import type { Hook } from '@hono/zod-openapi'
import { ApiError, ErrorCode } from './errors.ts'
import { findUnstorable, type UnstorableField } from '../lib/text.ts'

function invalid(target: string, fields: UnstorableField[]): ApiError {
  return new ApiError(ErrorCode.VALIDATION_FAILED, `Invalid ${target}: ${fields.map((f) => `${f.field}: ${f.message}`).join('; ')}`, {
    details: { fields },
  })
}

/** A schema's verdict on a request's input: its data when it passed and holds only storable text, else our 400. */
export function validated<T>(target: string, result: { success: true; data: T } | { success: false; error: z.ZodError }): T {
  if (result.success) {
    const bad = findUnstorable(result.data)
    if (bad) throw invalid(target, [bad])
    return result.data
  }
  const fields = result.error.issues.flatMap((issue) => {
    const at = issue.path.map(String).join('.')
    // an unknown key is reported on the key itself, so clients see which field was refused
    if (issue.code === 'unrecognized_keys') return issue.keys.map((k) => ({ field: at ? `${at}.${k}` : k, message: 'is not allowed' }))
    return [{ field: at || '(body)', message: issue.message }]
  })
  throw invalid(target, fields)
}

// deno-lint-ignore no-explicit-any -- one hook for every route, whatever its env and path
export const validationHook: Hook<unknown, any, any, unknown> = (result) => {
  validated(result.target, result)
}

export function createRouter(): OpenAPIHono {
  return new OpenAPIHono({ defaultHook: validationHook })
}

/** Security requirements as the OpenAPI document states them. */
export const bearerSecurity: Record<string, string[]>[] = [{ bearerAuth: [] }]
export const adminSecurity: Record<string, string[]>[] = [{ bearerAuth: [] }, { adminKey: [] }]
