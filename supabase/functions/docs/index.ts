// Edge Function for {base_url}/docs/...: mounts the docs router only.
import { serveFunction } from '../_shared/serve.ts'

await serveFunction('docs')
