// Edge Function for {base_url}/health/...: mounts the health router only.
import { serveFunction } from '../_shared/serve.ts'

await serveFunction('health')
