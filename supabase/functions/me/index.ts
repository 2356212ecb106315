// Edge Function for {base_url}/me/...: the me router alone (only its code is loaded).
import { serveFunction } from '../_shared/serve.ts'
import { meRouter } from '../../../functions-shared/identity/me-routes.ts'

await serveFunction('me', meRouter)
