// The time a page of a scan may take (OCR_PAGE_DEADLINE_MS): its own drawing and its own recognition.
// The clock runs while a drawing thread draws the page and while a recognizer reads it, and stands while
// the page waits: for a thread or a recognizer busy with other pages, or for one starting (its process,
// pdf.js or the models loaded), which is no work of the page's. The document's budget
// (OCR_DOCUMENT_BUDGET_MS) counts every moment, waits included: no page runs past its end.

export class PageClock {
  #left: number
  #since: number | undefined
  #byBudget = false
  /** the document's budget's end (performance.now()) */
  readonly until: number

  /** `ms` of the page's own time, and the document's budget ending at `until`. */
  constructor(ms: number, until = Number.POSITIVE_INFINITY) {
    this.#left = ms
    this.until = until
  }

  /**
   * The moment the page is out of time if its clock runs on from now (or runs from now, if it stands): its
   * own time's end or the budget's, whichever comes first.
   */
  get deadline(): number {
    const end = (this.#since ?? performance.now()) + this.#left
    this.#byBudget = this.until < end
    return Math.min(end, this.until)
  }

  /** Whether the deadline last looked at was the document budget's end, not the page's own time. */
  get budgetSpent(): boolean {
    return this.#byBudget
  }

  /** Starts the clock (the page is being drawn or read); the deadline. */
  start(): number {
    this.#since ??= performance.now()
    return this.deadline
  }

  /** Stops the clock (the page waits), keeping what is left of its time. */
  stop(): void {
    if (this.#since === undefined) return
    this.#left -= performance.now() - this.#since
    this.#since = undefined
  }
}

/**
 * `work` (something the page waits for, its clock standing), or `late()` thrown once `deadline`
 * (performance.now()) has passed.
 */
export async function within<T>(work: Promise<T>, deadline: number, late: () => Error): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined
  try {
    return await Promise.race([
      work,
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(late()), Math.max(1, deadline - performance.now()))
      }),
    ])
  } finally {
    clearTimeout(timer)
  }
}
