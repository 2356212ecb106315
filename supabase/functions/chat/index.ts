// Edge Function for {base_url}/chat/...: the chat router alone (only its code is loaded).
import { serveFunction } from '../_shared/serve.ts'
import { createAiProvider } from '../../../functions-shared/ai/select.ts'
import { chatRouter } from '../../../functions-shared/chat/routes.ts'

await serveFunction('chat', chatRouter, { ai: createAiProvider })
