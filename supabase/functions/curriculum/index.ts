// Edge Function for {base_url}/curriculum/...: mounts the curriculum router only.
import { serveFunction } from '../_shared/serve.ts'

await serveFunction('curriculum')
