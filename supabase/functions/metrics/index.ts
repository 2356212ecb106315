// Edge Function for {base_url}/metrics/...: mounts the metrics router only.
import { serveFunction } from '../_shared/serve.ts'

await serveFunction('metrics')
