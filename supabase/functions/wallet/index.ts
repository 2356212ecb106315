// Edge Function for {base_url}/wallet/...: the wallet router alone (only its code is loaded).
import { serveFunction } from '../_shared/serve.ts'
import { walletRouter } from '../../../functions-shared/wallet/routes.ts'

await serveFunction('wallet', walletRouter)
