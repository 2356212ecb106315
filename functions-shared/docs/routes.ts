// GET /docs (interactive API reference) and GET /docs/openapi.json (OpenAPI 3.1, generated from the
// same zod schemas the handlers validate with). The page's assets come from the installed
// swagger-ui-dist package, so it works offline.
import { createRoute, z } from '@hono/zod-openapi'
import type { Deps } from '../deps.ts'
import { createRouter } from '../http/router.ts'
import { ApiError, ErrorCode } from '../http/errors.ts'
import { errorResponses } from '../http/schemas.ts'

const ASSETS: Record<string, string> = {
  'swagger-ui.css': 'text/css; charset=utf-8',
  'swagger-ui-bundle.js': 'text/javascript; charset=utf-8',
  'favicon-32x32.png': 'image/png',
}

const page = createRoute({
  method: 'get',
  path: '/',
  tags: ['general'],
  summary: 'Interactive API reference',
  responses: { 200: { content: { 'text/html': { schema: z.string() } }, description: 'HTML page' }, ...errorResponses.public },
})

const document = createRoute({
  method: 'get',
  path: '/openapi.json',
  tags: ['general'],
  summary: 'OpenAPI 3.1 document of every route',
  responses: { 200: { content: { 'application/json': { schema: z.object({}).passthrough() } }, description: 'OpenAPI 3.1 document' } },
})

const asset = createRoute({
  method: 'get',
  path: '/assets/{file}',
  tags: ['general'],
  summary: 'Static asset of the reference page',
  request: { params: z.object({ file: z.enum(Object.keys(ASSETS) as [string, ...string[]]) }) },
  responses: { 200: { description: 'The asset' }, 404: { description: 'Unknown asset' } },
})

function html(): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>curriculum-tutor API</title>
<link rel="icon" type="image/png" href="docs/assets/favicon-32x32.png">
<link rel="stylesheet" href="docs/assets/swagger-ui.css">
</head>
<body>
<div id="swagger-ui"></div>
<script src="docs/assets/swagger-ui-bundle.js"></script>
<script>
window.ui = SwaggerUIBundle({ url: 'docs/openapi.json', dom_id: '#swagger-ui', deepLinking: true, persistAuthorization: true })
</script>
</body>
</html>`
}

export function docsRouter(deps: Deps, openApiDocument: () => unknown) {
  const router = createRouter()
  // read once: every answer then sends the one copy (each read was 1.7 MB more for the script, per
  // request, kept until the client read it)
  const assets = new Map<string, Promise<Uint8Array | null>>()
  let documentText: string | undefined
  const readAsset = (file: string) => {
    let bytes = assets.get(file)
    if (!bytes) {
      bytes = deps.readAsset('swagger-ui-dist', file)
      assets.set(file, bytes)
      void bytes.then((b) => b === null && assets.delete(file), () => assets.delete(file))
    }
    return bytes
  }
  // The page's links are relative to /docs: at /docs/ they would miss, so the browser is sent there, with
  // a relative Location that lands right behind any base path (/functions/v1 locally and on Supabase).
  router.use('/*', async (c, next) => {
    if (c.req.method === 'GET' && c.req.path.endsWith('/docs/')) return c.redirect(`../docs${new URL(c.req.url).search}`, 301)
    await next()
  })
  return router
    .openapi(page, (c) => c.html(html(), 200))
    // serialized once: 85 KB of JSON written out for every request was a millisecond of the one thread each
    .openapi(document, (c) => {
      documentText ??= JSON.stringify(openApiDocument())
      return c.body(documentText, 200, { 'Content-Type': 'application/json' }) as never
    })
    .openapi(asset, async (c) => {
      const { file } = c.req.valid('param')
      const bytes = await readAsset(file)
      if (!bytes) throw new ApiError(ErrorCode.NOT_FOUND, `Asset ${file} is not installed`)
      // as a stream of the one copy: a body of bytes is copied into each answer (a Response copies what it
      // is given), and an answer waits, whole, until its client reads it
      const body = new ReadableStream<Uint8Array>({
        start(controller) {
          controller.enqueue(bytes)
          controller.close()
        },
      })
      return c.body(body, 200, { 'Content-Type': ASSETS[file]!, 'Content-Length': String(bytes.byteLength), 'Cache-Control': 'public, max-age=86400' })
    })
}
