import { defineConfig } from 'vitest/config'

/** Files that spawn processes (npm start, the demo, Deno, tsc, workers) or run the page recognizer. */
const E2E = [
  'test/demo.test.ts',
  'test/start.test.ts',
  'test/readme-quickstart.test.ts',
  'test/functions.e2e.test.ts',
  'test/ocr.test.ts',
  'test/ocr.scans.test.ts',
  'test/ocr.e2e.test.ts',
  'test/ocr-pool.test.ts',
  'test/process-worker.test.ts',
  'test/scan-render.test.ts',
  'test/deno.test.ts',
  'test/typecheck.test.ts',
  'test/worker.test.ts',
  'test/ingestion.crash.test.ts',
  'test/pg-cron.test.ts',
  'test/chat.resume.e2e.test.ts',
]

export default defineConfig({
  test: {
    globalSetup: ['test/global-setup.ts'],
    testTimeout: 30_000,
    hookTimeout: 120_000,
    pool: 'forks',
    maxWorkers: 2,
    // Each file's database is its own; files run in parallel, tests inside a file in order.
    sequence: { concurrent: false },
    // `npm test` runs both; `npm run test:unit` watches the quick one (every other file, about a minute)
    projects: [
      { extends: true, test: { name: 'unit', include: ['test/**/*.test.ts'], exclude: E2E } },
      // real processes and the page recognizer: on two cores shared with other machines (steal time up to
      // a quarter of the CPU, seen 2026-11-26) a recognition of several pages took past the 30 s default
      { extends: true, test: { name: 'e2e', include: E2E, testTimeout: 120_000 } },
    ],
  },
})
