// Edge Function for {base_url}/me/...: mounts the me router only.
import { serveFunction } from '../_shared/serve.ts'

await serveFunction('me')
