// The request and response shapes of the scraper routes (/scraping, /admin/references), with their OpenAPI examples.
import { z } from '@hono/zod-openapi'
import { REFERENCE_STATUSES, SCRAPE_RUN_STATUSES } from '../domain/enums.ts'
import { canonicalSubject, levelForm, MAX_GRADE_CHARS } from './namespace.ts'

export const ReferenceStatus = z.enum(REFERENCE_STATUSES)

export const ScrapeRunSchema = z
  .object({
    id: z.uuid(),
    source: z.string(),
    status: z.enum(SCRAPE_RUN_STATUSES),
    found_count: z.number().int(),
    new_count: z.number().int(),
    duplicates: z.number().int(),
    quality_failed: z.number().int(),
    changed: z.number().int().openapi({ description: 'known references whose file changed at its address: ingested again' }),
    errors: z.number().int(),
    error_message: z.string().nullable(),
    started_at: z.string(),
    finished_at: z.string().nullable(),
    heartbeat_at: z.string().openapi({
      description:
        "the run's last progress (a listing page or a link done); a running run without progress for SCRAPE_RUN_STALE_SECONDS is closed as failed, its sync having died",
    }),
  })
  .openapi('ScrapeRun')

export const ReferenceSchema = z
  .object({
    id: z.uuid(),
    source: z.string(),
    pdf_source: z.string(),
    source_url: z.string().openapi({ description: 'the PDF URL after redirects' }),
    title: z.string().nullable(),
    major: z.string().nullable(),
    weight: z.number().int(),
    category: z.string().nullable(),
    grade: z.string().nullable(),
    subject: z.string().nullable(),
    language: z.string().nullable(),
    status: ReferenceStatus,
    content_fingerprint: z.string().nullable().openapi({
      description: '64-bit SimHash as a decimal string (signed, as PostgreSQL stores it; JSON numbers cannot hold 64 bits)',
    }),
    canonical_id: z.uuid().nullable(),
    vectordb_index: z.string().nullable(),
    vectordb_namespace: z.string().nullable(),
    vectordb_vector_count: z.number().int().nullable(),
    scrape_run_id: z.uuid().nullable(),
    discovered_at: z.string(),
    last_checked_at: z.string(),
  })
  .openapi('Reference')

export const page = <T extends z.ZodType>(item: T, name: string) =>
  z.object({ items: z.array(item), total: z.number().int(), limit: z.number().int(), offset: z.number().int() }).openapi(name)

/**
 * An operator's fix of a reference's metadata. Grade and subject are stored as the scraper's rules store
 * them (levelForm, canonicalSubject: 5-as is 5AS, svt is sciences-naturelles): then the namespace
 * grade-{grade}-{subject} is those very values in lower case, and a question's filters, read the same
 * way, find the document.
 */
export const UpdateReferenceRequest = z
  .strictObject({
    title: z.string().trim().min(1).max(300).optional(),
    grade: z.string().trim().max(MAX_GRADE_CHARS).regex(/^[A-Za-z0-9]+(?:-[A-Za-z0-9]+)*$/, 'letters and digits, words joined by single dashes (e.g. 4AS)')
      .overwrite((g) => levelForm(g) ?? g).optional(),
    subject: z.string().trim().max(64).regex(
      /^[a-z0-9]+(?:-[a-z0-9]+)*$/,
      'a lower-case slug: a-z and 0-9, words joined by single dashes (e.g. education-islamique)',
    ).overwrite((s) => canonicalSubject(s) ?? s).optional(),
    language: z.enum(['fr', 'ar', 'hassaniya']).optional(),
    category: z.string().trim().min(1).max(100).optional(),
    major: z.string().trim().min(1).max(100).optional(),
    weight: z.number().int().min(-1000).max(1000).optional(),
  })
  .refine((v) => Object.values(v).some((x) => x !== undefined), { message: 'give at least one of title, grade, subject, language, category, major, weight' })
  .openapi('UpdateReferenceRequest')
export type UpdateReferenceRequest = z.infer<typeof UpdateReferenceRequest>
