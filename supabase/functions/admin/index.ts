// Edge Function for {base_url}/admin/...: the admin router alone (only its code is loaded).
import { serveFunction } from '../_shared/serve.ts'
import { createAiProvider } from '../../../functions-shared/ai/select.ts'
import { createSupabaseClients } from '../../../functions-shared/identity/supabase.ts'
import { adminRouter } from '../../../functions-shared/admin/routes.ts'

await serveFunction('admin', adminRouter, { supabase: createSupabaseClients, ai: createAiProvider })
