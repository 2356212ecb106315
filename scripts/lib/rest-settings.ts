// The settings of the local /rest/v1 (local-platform/rest/router.ts) that a hosted project's PostgREST
// takes from supabase/config.toml: the schemas it exposes and its row cap.
import { readFile } from 'node:fs/promises'
import { fileURLToPath } from 'node:url'
import { parse as parseToml } from 'smol-toml'
import type { RestOptions } from '../../local-platform/rest/router.ts'

const CONFIG_TOML = fileURLToPath(new URL('../../supabase/config.toml', import.meta.url))

/** /rest/v1's schemas and row cap, from supabase/config.toml's [api] section (as PostgREST takes them). */
export async function restSettings(): Promise<RestOptions> {
  const api = (parseToml(await readFile(CONFIG_TOML, 'utf8')).api ?? {}) as { schemas?: string[]; max_rows?: number }
  return { schemas: api.schemas ?? ['public'], maxRows: typeof api.max_rows === 'number' && api.max_rows > 0 ? api.max_rows : null }
}
