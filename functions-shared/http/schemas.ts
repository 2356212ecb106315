// Response schemas shared by every router's OpenAPI description.
import { z } from '@hono/zod-openapi'

export const ErrorSchema = z
  .object({
    error: z.string().openapi({ example: 'not_found' }),
    message: z.string(),
    request_id: z.string().nullable(),
  })
  .passthrough()
  .openapi('Error')

export const RateLimitedSchema = z
  .object({
    error: z.literal('rate_limited'),
    message: z.string(),
    request_id: z.string(),
    retry_after: z.number().int(),
    limit: z.number().int(),
    window: z.string().openapi({ example: '1m' }),
  })
  .openapi('RateLimited')

const json = <T extends z.ZodType>(schema: T, description: string) => ({ content: { 'application/json': { schema } }, description })

/** The error responses each kind of route can give. */
export const errorResponses = {
  public: {
    429: json(RateLimitedSchema, 'Rate limit exceeded'),
    500: json(ErrorSchema, 'Unexpected error'),
  },
  protected: {
    400: json(ErrorSchema, 'Invalid input'),
    401: json(ErrorSchema, 'Missing, invalid or expired credentials'),
    403: json(ErrorSchema, 'Role not allowed'),
    429: json(RateLimitedSchema, 'Rate limit exceeded'),
    500: json(ErrorSchema, 'Unexpected error'),
  },
}
export { json as jsonContent }
