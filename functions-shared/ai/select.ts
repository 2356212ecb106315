// Which AI provider a process uses: OpenAI (or any server that speaks its API) when chosen, else the offline one.
import type { Config } from '../config.ts'
import type { AiProvider } from './provider.ts'
import { createOfflineProvider } from './offline.ts'
import { createOpenAiProvider } from './openai.ts'

/** openai when chosen (or, with AI_PROVIDER=auto, when a key is set); the offline provider otherwise. */
export function createAiProvider(config: Config): AiProvider {
  const useOpenAi = config.AI_PROVIDER === 'openai' || (config.AI_PROVIDER === 'auto' && config.OPENAI_API_KEY !== '')
  if (!useOpenAi) return createOfflineProvider(config.VECTOR_DIMENSION)
  return createOpenAiProvider({
    apiKey: config.OPENAI_API_KEY,
    baseUrl: config.OPENAI_BASE_URL,
    chatModel: config.OPENAI_CHAT_MODEL,
    embeddingModel: config.OPENAI_EMBEDDING_MODEL,
    rerankModel: config.OPENAI_RERANK_MODEL,
    translateModel: config.OPENAI_TRANSLATE_MODEL,
    dimension: config.VECTOR_DIMENSION,
    timeoutMs: config.OPENAI_TIMEOUT_MS,
  })
}
