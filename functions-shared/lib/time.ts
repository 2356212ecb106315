// Timestamps as the API writes them.
/** A database timestamp as ISO 8601, or null. */
export const iso = (d: unknown): string | null => (d ? new Date(d as Date).toISOString() : null)
