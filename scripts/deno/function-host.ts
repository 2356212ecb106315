// Runs an app's own Edge Function as `supabase functions serve` does: its index.ts as written, with its
// Deno.serve (in any of its forms) listening on a loopback port of the system's choosing, which Deno
// prints ("Listening on http://127.0.0.1:<port>/") and the gateway reads. The gateway forwards
// /functions/v1/<name>/... to it, the path from /<name> on, as Supabase's edge runtime passes it.
type Handler = (request: Request, info: unknown) => Response | Promise<Response>
type Options = Record<string, unknown> & { handler?: Handler }

const serve = Deno.serve.bind(Deno) as (options: Options & { handler: Handler }) => unknown
;(Deno as unknown as { serve: (...args: unknown[]) => unknown }).serve = (...args: unknown[]) => {
  const [first, second] = args
  const options: Options = typeof first === 'function' ? {} : ((first as Options | undefined) ?? {})
  const handler = (typeof first === 'function' ? first : typeof second === 'function' ? second : options.handler) as Handler | undefined
  if (!handler) throw new TypeError('Deno.serve needs a handler')
  return serve({ ...options, handler, port: 0, hostname: '127.0.0.1' })
}

const entry = Deno.args[0]
if (!entry) throw new Error("usage: function-host.ts <path of the function's index.ts>")
await import(new URL(entry, `file://${Deno.cwd()}/`).href)
