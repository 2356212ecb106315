// The AI provider interface (ARCHITECTURE.md §5). Ingestion needs embeddings; the chat adds chat,
// rerank and translate to this interface and the openai implementation beside the offline one.
export interface Embedder {
  readonly name: string
  readonly dimension: number
  /** one vector per text, each of `dimension` numbers, L2-normalized */
  embed(texts: readonly string[]): Promise<number[][]>
}
