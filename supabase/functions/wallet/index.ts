// Edge Function for {base_url}/wallet/...: mounts the wallet router only.
import { serveFunction } from '../_shared/serve.ts'

await serveFunction('wallet')
