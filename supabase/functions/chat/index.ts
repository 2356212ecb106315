// Edge Function for {base_url}/chat/...: mounts the chat router only.
import { serveFunction } from '../_shared/serve.ts'

await serveFunction('chat')
