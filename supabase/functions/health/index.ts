// Edge Function for {base_url}/health/...: the health router alone (only its code is loaded).
import { serveFunction } from '../_shared/serve.ts'
import { healthRouter } from '../../../functions-shared/health/routes.ts'

await serveFunction('health', healthRouter)
