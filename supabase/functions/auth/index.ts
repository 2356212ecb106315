// Edge Function for {base_url}/auth/...: mounts the auth router only.
import { serveFunction } from '../_shared/serve.ts'

await serveFunction('auth')
