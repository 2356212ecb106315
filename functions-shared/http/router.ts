// Every router is an OpenAPIHono whose zod validation failures become our 400 body with the fields.
import { OpenAPIHono } from '@hono/zod-openapi'
import type { Hook } from '@hono/zod-openapi'
import { ApiError, ErrorCode } from './errors.ts'

export const validationHook: Hook<unknown, any, any, unknown> = (result) => {
  if (result.success) return
  const fields = result.error.issues.flatMap((issue) => {
    const at = issue.path.map(String).join('.')
    // an unknown key is reported on the key itself, so clients see which field was refused
    if (issue.code === 'unrecognized_keys') return issue.keys.map((k) => ({ field: at ? `${at}.${k}` : k, message: 'is not allowed' }))
    return [{ field: at || '(body)', message: issue.message }]
  })
  throw new ApiError(ErrorCode.VALIDATION_FAILED, `Invalid ${result.target}: ${fields.map((f) => `${f.field}: ${f.message}`).join('; ')}`, {
    details: { fields },
  })
}

export function createRouter(): OpenAPIHono {
  return new OpenAPIHono({ defaultHook: validationHook })
}

/** Security requirements as the OpenAPI document states them. */
export const bearerSecurity: Record<string, string[]>[] = [{ bearerAuth: [] }]
export const adminSecurity: Record<string, string[]>[] = [{ bearerAuth: [] }, { adminKey: [] }]
