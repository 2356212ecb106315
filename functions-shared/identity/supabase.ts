// supabase-js clients on SUPABASE_URL, so the identity endpoints run the same code against the local
// auth server and a hosted Supabase project: the anon key for sign-up and sign-in, the service-role key
// for admin calls. Clients are per call (no session is kept on the server).
import { createClient } from '@supabase/supabase-js'
import type { Config } from '../config.ts'
import { publicUrl } from '../config.ts'
import { apiKey } from '../lib/keys.ts'
import type { SupabaseClients } from '../deps.ts'

export function createSupabaseClients(config: Config, fetchImpl?: typeof fetch): SupabaseClients {
  const url = config.SUPABASE_URL ?? publicUrl(config)
  const keys = {
    anon: config.SUPABASE_ANON_KEY ? Promise.resolve(config.SUPABASE_ANON_KEY) : apiKey(config.JWT_SECRET, 'anon'),
    admin: config.SUPABASE_SERVICE_ROLE_KEY ? Promise.resolve(config.SUPABASE_SERVICE_ROLE_KEY) : apiKey(config.JWT_SECRET, 'service_role'),
  }
  const make = async (key: Promise<string>, requestId: string, clientIp?: string) =>
    createClient(url, await key, {
      auth: { persistSession: false, autoRefreshToken: false, detectSessionInUrl: false },
      global: { headers: { 'X-Request-ID': requestId, ...(clientIp ? { 'Sb-Forwarded-For': clientIp } : {}) }, ...(fetchImpl ? { fetch: fetchImpl } : {}) },
    })
  return {
    anon: (requestId, clientIp) => make(keys.anon, requestId, clientIp),
    admin: (requestId) => make(keys.admin, requestId),
  }
}
