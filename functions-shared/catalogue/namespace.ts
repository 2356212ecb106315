// A reference's namespace (spec §2.2): the grade and subject of its vectors, as chat filters on them.
// Kept apart from the pipeline so that the chat function loads no PDF code.

/** A grade or subject as a namespace writes it: accents off, lower case, runs of anything else one dash. */
export function namespaceSlug(s: string): string {
  return s.normalize('NFKD').replace(/[\u0300-\u036f]/g, '').toLowerCase().replace(/[^\p{L}\p{N}]+/gu, '-').replace(/^-|-$/g, '')
}

/** The namespace of spec §2.2: grade-{grade}-{subject}, in lower-case slug form. */
export function namespaceFor(grade: string, subject: string): string {
  return `grade-${namespaceSlug(grade)}-${namespaceSlug(subject)}`
}

/**
 * Whether a reference's grade and subject make a namespace: both set, and both with a letter or digit
 * (a value of punctuation alone would make `grade--x`, which no question ever filters on).
 */
export function hasNamespace(grade: unknown, subject: unknown): boolean {
  return typeof grade === 'string' && typeof subject === 'string' && namespaceSlug(grade) !== '' && namespaceSlug(subject) !== ''
}
