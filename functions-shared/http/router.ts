// Every router is an OpenAPIHono whose zod validation failures become our 400 body with the fields.
import { OpenAPIHono } from '@hono/zod-openapi'
import type { Hook } from '@hono/zod-openapi'
import { ApiError, ErrorCode } from './errors.ts'

export const validationHook: Hook<unknown, any, any, unknown> = (result) => {
  if (result.success) return
  const fields = result.error.issues.map((issue) => ({
    field: issue.path.map(String).join('.') || '(body)',
    message: issue.message,
  }))
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
