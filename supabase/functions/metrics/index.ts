// Edge Function for {base_url}/metrics/...: the metrics router alone (only its code is loaded).
import { serveFunction } from '../_shared/serve.ts'
import { metricsRouter } from '../../../functions-shared/metrics/routes.ts'

await serveFunction('metrics', metricsRouter)
