// The paging query every list endpoint takes.
import { z } from '@hono/zod-openapi'
import type { Config } from '../config.ts'

/** limit (default 50, at most 200) and offset, as every list endpoint takes them. */
export function listQuery(config: Config) {
  return z.object({
    limit: z.coerce.number().int().min(1).max(config.LIST_MAX_LIMIT).default(config.LIST_DEFAULT_LIMIT),
    offset: z.coerce.number().int().min(0).max(1_000_000).default(0),
  })
}
