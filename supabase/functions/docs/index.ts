// Edge Function for {base_url}/docs/...: the API reference, which describes every router, so it loads
// them all (the other functions load their own router alone).
import { serveFunction } from '../_shared/serve.ts'
import { ROUTERS } from '../../../functions-shared/app.ts'

await serveFunction('docs', ROUTERS.docs)
