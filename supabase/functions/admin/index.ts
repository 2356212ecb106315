// Edge Function for {base_url}/admin/...: mounts the admin router only.
import { serveFunction } from '../_shared/serve.ts'

await serveFunction('admin')
