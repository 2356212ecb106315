// Edge Function for {base_url}/auth/...: the auth router alone (only its code is loaded).
import { serveFunction } from '../_shared/serve.ts'
import { createSupabaseClients } from '../../../functions-shared/identity/supabase.ts'
import { authRouter } from '../../../functions-shared/identity/auth-routes.ts'

await serveFunction('auth', authRouter, { supabase: createSupabaseClients })
