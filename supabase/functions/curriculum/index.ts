// Edge Function for {base_url}/curriculum/...: the curriculum router alone (only its code is loaded).
import { serveFunction } from '../_shared/serve.ts'
import { curriculumRouter } from '../../../functions-shared/curriculum/routes.ts'

await serveFunction('curriculum', curriculumRouter)
