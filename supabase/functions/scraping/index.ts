// Edge Function for {base_url}/scraping/...: mounts the scraping router only.
import { serveFunction } from '../_shared/serve.ts'

await serveFunction('scraping')
