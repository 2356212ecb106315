// Edge Function for {base_url}/scraping/...: the scraping router alone (only its code is loaded).
import { serveFunction } from '../_shared/serve.ts'
import { scrapingRouter } from '../../../functions-shared/catalogue/routes.ts'

await serveFunction('scraping', scrapingRouter)
