// Every setting of the service with its schema and its meaning: the table config.ts parses the environment
// with, and from which .env.example and docs/configuration.md are generated (npm run env:example).
import { z } from 'zod'
import { parseHostEntry, parseHostList } from './net/host-entry.ts'

const int = (def: number, min = 0) => z.coerce.number().int().min(min).default(def)
const num = (def: number, min = 0, max = Number.MAX_VALUE) => z.coerce.number().min(min).max(max).default(def)
const bool = (def: boolean) =>
  z
    .enum(['true', 'false', '1', '0', 'yes', 'no', 'on', 'off'])
    .default(def ? 'true' : 'false')
    .transform((v) => v === 'true' || v === '1' || v === 'yes' || v === 'on')
const str = (def: string) => z.string().default(def)
const optionalUrl = z.url().optional()

/** The local Supabase stack's well-known JWT secret (Supabase CLI default); replace it anywhere shared. */
export const LOCAL_JWT_SECRET = 'super-secret-jwt-token-with-at-least-32-characters-long'

// Each entry: [schema, description]. The description feeds .env.example and docs/configuration.md.
export const settings = {
  // --- server and runtime
  PORT: [int(54321, 0).pipe(z.number().max(65535)), 'HTTP port of the local gateway (functions under /functions/v1, auth under /auth/v1)'],
  HOST: [str('127.0.0.1'), 'Interface the local gateway listens on'],
  PUBLIC_URL: [optionalUrl, 'Public base URL of the gateway; defaults to http://HOST:PORT'],
  LOG_LEVEL: [z.enum(['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent']).default('info'), 'Lowest log level written'],
  FUNCTIONS_DIR: [
    str('supabase/functions'),
    "Local gateway: the folder whose sub-folders with an index.ts are served at /functions/v1/<name> (as supabase functions serve does): the service's own, and an app's own in a Deno process each, with verify_jwt from the config.toml beside it",
  ],
  FUNCTIONS_RUNTIME: [
    z.enum(['node', 'deno']).default('node'),
    'Local gateway: node serves every function in this process; deno runs each of them in its own Deno process behind /functions/v1/<name>, as the edge runtime does',
  ],
  SHUTDOWN_TIMEOUT_MS: [int(10000), 'How long Ctrl-C waits for in-flight requests before closing anyway'],
  // --- database
  DATABASE_URL: [optionalUrl, 'PostgreSQL 15+ with pgvector; when unset the embedded PGlite database is used (SUPABASE_DB_URL is read too)'],
  DATA_DIR: [str('.data'), "Folder holding the embedded database and the demo portal's generated PDFs"],
  DB_PORT: [int(54322, 0).pipe(z.number().max(65535)), 'Port on which the embedded database accepts PostgreSQL clients (psql, postgres.js)'],
  DB_IDLE_IN_TRANSACTION_MS: [
    int(10000),
    'Embedded database: a client (psql, a worker) idle in a transaction this long while another waits for the one session is disconnected, its transaction rolled back (0: never)',
  ],
  DB_POOL_MAX: [int(4, 1).pipe(z.number().max(64)), 'Connections per process to a PostgreSQL server (the embedded database always uses one)'],
  DB_PREPARE: [bool(true), 'Use prepared statements; set false behind a transaction pooler (Supabase port 6543)'],
  DB_STATEMENT_TIMEOUT_MS: [int(15000), 'Statement timeout for the service connection, 0 for none'],
  // --- auth
  SUPABASE_URL: [optionalUrl, 'Base URL of the Supabase API (auth under /auth/v1); defaults to the local gateway'],
  JWT_SECRET: [
    z.string().min(32).default(LOCAL_JWT_SECRET),
    "HS256 secret that signs and verifies access tokens. Unset, npm start uses its DATA_DIR's own (jwt-secret, made on the first start), not this default: the Supabase CLI's, published",
  ],
  JWT_JWKS_URL: [optionalUrl, 'JWKS URL for asymmetric access tokens (RS256, ES256), e.g. https://<ref>.supabase.co/auth/v1/.well-known/jwks.json'],
  JWT_EXPIRY_SECONDS: [int(3600, 60), 'Lifetime of access tokens issued by the local auth server'],
  JWT_CLOCK_TOLERANCE_SECONDS: [int(5), 'Clock skew tolerated when checking exp and nbf'],
  SUPABASE_ANON_KEY: [z.string().optional(), 'Anon key; derived from JWT_SECRET when unset'],
  SUPABASE_SERVICE_ROLE_KEY: [z.string().optional(), 'Service-role key (never sent to clients); derived from JWT_SECRET when unset'],
  LOCAL_AUTH: [bool(true), 'Serve the local GoTrue-compatible auth server under /auth/v1 (Node gateway only; never on Supabase)'],
  AUTH_SITE_URL: [z.url().default('http://127.0.0.1:3000'), 'Local auth: where recovery links send the browser by default (config.toml auth.site_url)'],
  AUTH_ADDITIONAL_REDIRECT_URLS: [
    str(''),
    'Local auth: comma-separated URL patterns (GoTrue globs: * and ? stop at . and /, ** does not) a redirect_to may name besides SITE_URL (config.toml auth.additional_redirect_urls); anything else goes to SITE_URL',
  ],
  AUTH_RATE_LIMIT_SIGN_IN_SIGN_UPS: [
    int(30, 1),
    'Local auth: sign-ins, sign-ups, recoveries and user updates per 5 minutes per client IP, burst 30 (config.toml auth.rate_limit.sign_in_sign_ups)',
  ],
  AUTH_RATE_LIMIT_TOKEN_REFRESH: [int(150, 1), 'Local auth: refresh-token grants per 5 minutes per client IP, burst 30 (auth.rate_limit.token_refresh)'],
  AUTH_RATE_LIMIT_TOKEN_VERIFICATIONS: [int(30, 1), 'Local auth: /verify requests per 5 minutes per client IP, burst 30 (auth.rate_limit.token_verifications)'],
  AUTH_RATE_LIMIT_EMAIL_SENT: [
    int(30, 1),
    'Local auth: recovery emails per hour and client IP (GoTrue RATE_LIMIT_EMAIL_SENT counts them for the project; the local stack logs them instead of sending)',
  ],
  AUTH_EMAIL_MAX_FREQUENCY_SECONDS: [int(60, 0), 'Local auth: seconds between two recovery emails to one address (GoTrue SMTP_MAX_FREQUENCY)'],
  AUTH_BCRYPT_COST: [int(10, 4).pipe(z.number().max(14)), 'Local auth: bcrypt cost of password hashes'],
  AUTH_ENABLE_CONFIRMATIONS: [
    bool(false),
    'Local auth: a sign-up confirms its address by the emailed link or code before it signs in (config.toml auth.email.enable_confirmations; hosted projects turn it on)',
  ],
  AUTH_ANONYMOUS_SIGN_INS: [bool(false), 'Local auth: signInAnonymously() makes an anonymous user (config.toml auth.enable_anonymous_sign_ins)'],
  AUTH_MFA_TOTP_ENABLED: [
    bool(true),
    'Local auth: TOTP factors may be enrolled and verified (config.toml auth.mfa.totp.enroll_enabled and verify_enabled; on by default, as on hosted projects)',
  ],
  AUTH_MFA_MAX_ENROLLED_FACTORS: [int(10, 1), 'Local auth: factors one user may have enrolled (config.toml auth.mfa.max_enrolled_factors)'],
  AUTH_RATE_LIMIT_MFA: [
    int(15, 1),
    'Local auth: MFA challenges, and separately verifications, per minute per client IP, burst 30 (GoTrue MFA_RATE_LIMIT_CHALLENGE_AND_VERIFY)',
  ],
  AUTH_OTP_EXPIRY_SECONDS: [
    int(3600, 60),
    'Local auth: how long an emailed code or link (confirmation, magic link, recovery, invitation) is good for (config.toml auth.email.otp_expiry)',
  ],
  AUTH_MIN_PASSWORD_LENGTH: [int(6, 1), 'Minimum password length (GoTrue default 6)'],
  AUTH_REFRESH_REUSE_INTERVAL_SECONDS: [
    int(10),
    'Local auth: a used refresh token may be replayed this long (concurrent tabs) before reuse revokes the session',
  ],
  AUTH_HOOK_ENABLED: [bool(true), 'Local auth: call public.custom_access_token_hook when issuing tokens, as supabase/config.toml enables it'],
  ADMIN_API_KEY: [str(''), 'Deprecated X-Admin-Key value accepted on admin routes; empty disables the header'],
  TRUST_PROXY: [bool(false), 'Take the client IP from X-Forwarded-For (true behind the Supabase gateway or a proxy)'],
  TRUSTED_PROXY_HOPS: [
    int(1, 1),
    'With TRUST_PROXY: the proxies in front of the service that each add the address they saw to X-Forwarded-For; the client is the address that many from its right end (what a client writes to the left of it is not believed)',
  ],
  // --- HTTP limits
  CORS_ORIGIN: [str('*'), 'Access-Control-Allow-Origin value'],
  BODY_LIMIT_BYTES: [int(1048576, 1), 'Largest request body accepted by routes other than the upload, and largest JSON body on every route'],
  UPLOAD_MAX_BYTES: [int(104857600, 1), 'Largest upload and downloaded PDF (spec: 100 MB)'],
  CONNECTION_LIMIT_PER_CLIENT: [
    int(256, 0),
    'Node gateway: open connections one client may hold (an IPv4 address, an IPv6 /64, all of loopback as one); a connection past it is answered 429 and closed. 0 = no limit; none with TRUST_PROXY (the proxy is the one client)',
  ],
  HEADERS_TIMEOUT_MS: [
    int(20000, 1000).pipe(z.number().max(300000)),
    'Node gateway: time a connection has to send a request line and headers before it is closed (Node: headersTimeout)',
  ],
  SEND_TIMEOUT_MS: [
    int(30000, 0),
    'Node gateway: time a client may leave an answer unread (nothing of what is waiting to be sent to it leaves) before its connection is closed. 0 = never',
  ],
  LIST_DEFAULT_LIMIT: [int(50, 1), 'Default page size of list endpoints'],
  LIST_MAX_LIMIT: [int(200, 1), 'Largest page size of list endpoints'],
  // --- rate limits (sliding window)
  RATE_LIMIT_STORE: [
    z.enum(['memory', 'postgres']).default('memory'),
    'Where rate-limit counters live: memory (one instance) or postgres (shared by instances)',
  ],
  RATE_LIMIT_WINDOW_SECONDS: [int(60, 1), 'Length of the sliding window'],
  RATE_LIMIT_CHAT_PER_MINUTE: [int(10, 1), 'Chat requests per window per user'],
  RATE_LIMIT_WALLET_PER_MINUTE: [int(30, 1), 'Wallet requests per window per user'],
  RATE_LIMIT_UPLOAD_PER_MINUTE: [int(30, 1), 'Curriculum uploads per window per user'],
  RATE_LIMIT_AUTH_PER_MINUTE: [int(5, 1), 'Auth requests per window per client IP'],
  RATE_LIMIT_ADMIN_PER_MINUTE: [int(60, 1), 'Admin requests per window per admin'],
  RATE_LIMIT_PUBLIC_PER_MINUTE: [int(120, 1), 'Public catalogue and scraping reads per window per client IP'],
  RATE_LIMIT_PROFILE_PER_MINUTE: [int(60, 1), 'Profile (/me) requests per window per user'],
  RATE_LIMIT_TURNS_PER_MINUTE: [int(60, 1), 'Reads and cancels of chat turns (GET /chat/turns/{id}, POST /chat/turns/{id}/cancel) per window per user'],
  RATE_LIMIT_REST_PER_MINUTE: [
    int(600, 1),
    "Local /rest/v1 requests per window per user (a user's token), or per client IP (the anon key or no token); the service role is not limited",
  ],
  // --- scraping and downloads
  SCRAPER_SOURCES_FILE: [str('config/scraper-sources.json'), 'JSON file of scraper sources (see config/scraper-sources.json)'],
  DEMO_PORTAL: [
    z.enum(['auto', 'on', 'off']).default('auto'),
    'Serve the bundled demo curriculum portal at /demo-portal (local gateway): auto = on with the embedded database only; on also lets downloads reach loopback',
  ],
  FETCH_ALLOWED_HOSTS: [
    z.string().default('').refine((v) => parseHostList(v).every((e) => parseHostEntry(e) !== null), 'comma-separated host, host:port or *.domain entries'),
    'Comma-separated hosts (host, host:port, *.domain) that downloads of a reference whose source is not configured may reach; empty: such downloads are refused',
  ],
  FETCH_ALLOW_LOOPBACK: [bool(false), 'Let downloads reach loopback addresses (tests and the local demo portal only); private ranges are always refused'],
  FETCH_TIMEOUT_MS: [int(30000, 1), 'Deadline of one download (listing page or PDF), redirects included'],
  PDF_PARSE_DEADLINE_MS: [int(60000, 1), 'Deadline of text extraction from one PDF'],
  // --- AI provider
  AI_PROVIDER: [z.enum(['auto', 'offline', 'openai']).default('auto'), 'auto: openai when OPENAI_API_KEY is set, else offline (deterministic, no network)'],
  OPENAI_API_KEY: [str(''), 'Key for the OpenAI API or a compatible server'],
  OPENAI_BASE_URL: [optionalUrl, 'An OpenAI-compatible server (vLLM, Ollama, llama.cpp); default the OpenAI API'],
  OPENAI_CHAT_MODEL: [str('gpt-4o-mini'), 'Model that writes answers'],
  OPENAI_EMBEDDING_MODEL: [str('text-embedding-3-small'), 'Embedding model (asked for VECTOR_DIMENSION dimensions)'],
  OPENAI_RERANK_MODEL: [str('gpt-4o-mini'), 'Small model that reranks snippets'],
  OPENAI_TRANSLATE_MODEL: [str('gpt-4o-mini'), 'Model that translates Arabic and Hassaniya questions to French'],
  OPENAI_TIMEOUT_MS: [int(30000, 1), 'Timeout of one provider call, its body included; for a streamed chat answer, of the wait for each piece'],
  // --- billing (spec §8.2)
  BILLING_BASE_COST: [int(5), 'Base cost of an answer in tokens'],
  BILLING_CHARS_PER_TOKEN: [int(200, 1), 'Generated characters per output token'],
  BILLING_CLARIFY_COST: [int(2), 'Flat cost of a clarifying answer'],
  WELCOME_BONUS_TOKENS: [int(50), 'Tokens granted on the first wallet fetch'],
  WELCOME_BONUS_DAILY_PER_ADDRESS: [
    int(20, 0),
    'Welcome bonuses granted per client address (as the per-IP limits count it) and UTC day; a wallet made past it starts at 0 and gets its bonus on a later fetch from an address with room (0: no cap)',
  ],
  RESERVATION_TTL_SECONDS: [int(300, 1), 'Time-to-live of a token reservation'],
  ACTUAL_COST_CAP_MULTIPLIER: [num(2, 1), 'The actual charge is capped at this multiple of the estimate'],
  EXPIRY_INTERVAL_SECONDS: [int(60), 'How often the local server expires stale reservations (0: never; on Supabase pg_cron does it)'],
  WALLET_INTERNAL_ROUTES: [bool(true), 'Serve POST /wallet/internal/reserve and /finalize (testing only; set false in production: 404)'],
  // --- tiers (spec §2.10); a daily limit of 0 means unlimited
  TIER_FREE_TOP_K: [int(10, 1), 'free tier: dense candidates'],
  TIER_FREE_RERANK_N: [int(3, 1), 'free tier: snippets kept after rerank'],
  TIER_FREE_MAX_TOKENS: [int(500, 1), 'free tier: max tokens per request'],
  TIER_FREE_DAILY_LIMIT: [int(50), 'free tier: requests per day (0 = unlimited)'],
  TIER_STANDARD_TOP_K: [int(20, 1), 'standard tier: dense candidates'],
  TIER_STANDARD_RERANK_N: [int(5, 1), 'standard tier: snippets kept after rerank'],
  TIER_STANDARD_MAX_TOKENS: [int(2000, 1), 'standard tier: max tokens per request'],
  TIER_STANDARD_DAILY_LIMIT: [int(500), 'standard tier: requests per day (0 = unlimited)'],
  TIER_PREMIUM_TOP_K: [int(30, 1), 'premium tier: dense candidates'],
  TIER_PREMIUM_RERANK_N: [int(8, 1), 'premium tier: snippets kept after rerank'],
  TIER_PREMIUM_MAX_TOKENS: [int(4000, 1), 'premium tier: max tokens per request'],
  TIER_PREMIUM_DAILY_LIMIT: [int(0), 'premium tier: requests per day (0 = unlimited)'],
  // --- ingestion, quality and resilience (spec §8.4)
  VECTOR_DIMENSION: [z.coerce.number().int().pipe(z.literal(1536)).default(1536), 'Embedding dimension (fixed by the schema)'],
  VECTOR_INDEX_NAME: [str('curriculum-1536'), 'Name of the vector index'],
  JOB_MAX_ATTEMPTS: [int(3, 1), 'Attempts of a transient ingestion step before the job fails'],
  JOB_BACKOFF_BASE_MS: [int(1000), 'Base delay of the exponential backoff (full jitter)'],
  JOB_BACKOFF_MAX_MS: [int(30000), 'Largest backoff delay'],
  JOB_STALE_SECONDS: [int(900, 1), 'A job running this long without progress is reclaimed as failed (its worker died)'],
  SCRAPE_RUN_STALE_SECONDS: [
    int(900, 1),
    'A scrape run this long without progress (a listing page or a link done) is closed as failed (its process died mid-sync) when runs are listed or a sync starts; above the longest one link can take (a download, its reading, its OCR sample)',
  ],
  EMBED_BATCH_SIZE: [int(64, 1), 'Chunks per embedding request'],
  VECTOR_UPSERT_BATCH_SIZE: [int(200, 1), 'Vectors per upsert statement'],
  CHUNK_CHARS: [int(1000, 1), 'Character chunking: chunk size'],
  CHUNK_CHAR_OVERLAP: [int(150), 'Character chunking: overlap'],
  CHUNK_TOKENS_FR: [int(512, 1), 'Token chunking, French: chunk size (cl100k_base)'],
  CHUNK_TOKEN_OVERLAP_FR: [int(64), 'Token chunking, French: overlap'],
  CHUNK_TOKENS_AR: [int(384, 1), 'Token chunking, Arabic and Hassaniya: chunk size'],
  CHUNK_TOKEN_OVERLAP_AR: [int(48), 'Token chunking, Arabic and Hassaniya: overlap'],
  QUALITY_MIN_TEXT_CHARS: [int(200), 'Minimum document text length after normalization'],
  QUALITY_MIN_PAGE_CHARS: [int(50), 'Pages shorter than this after normalization are skipped'],
  OCR_MIN_CONFIDENCE_AR: [num(0.7, 0, 1), 'Minimum OCR confidence for Arabic and Hassaniya'],
  OCR_MIN_CONFIDENCE_FR: [num(0.8, 0, 1), 'Minimum OCR confidence for French'],
  OCR_MODE: [
    z.enum(['auto', 'always', 'never']).default('auto'),
    'Which PDF pages are recognized from their image: auto (pages without a text layer, or whose layer fails the readability check), always (every page), never',
  ],
  OCR_CONCURRENCY: [int(0), 'Recognizers working at once in a Node process (0: one per core but one, at least 1)'],
  OCR_DPI: [
    int(200, 72).pipe(z.number().max(600)),
    'Resolution at which a page is rendered for recognition (a scan finer than this: at its own resolution, up to 400)',
  ],
  OCR_PAGE_DEADLINE_MS: [
    int(60000, 1),
    "Time one page's own rendering and recognition may take (not its wait for a drawing thread or a recognizer busy with other pages or starting); a late page is left out",
  ],
  OCR_MAX_PAGES: [int(300, 1), 'Pages of one document that are recognized at most; the rest are left out (a warning)'],
  PDF_READERS: [
    int(2, 1),
    'Node: processes reading PDF text layers at once, shared by uploads, jobs and the scraper (each up to 1 GB of heap); a document that finds several free is read by them all, a share of its pages each; idle ones stay, pdf.js loaded; more readings wait',
  ],
  PDF_READER_QUEUE: [int(32, 0), 'Node: readings that may wait for a PDF reader; an upload past them is answered 503 with Retry-After'],
  OCR_DOCUMENT_BUDGET_MS: [int(1_800_000, 1000), 'Time the recognizer may spend on one document; past it the document fails, naming the pages left unread'],
  OCR_SCRAPER_PAGES: [int(3, 1), 'Pages of a scan the scraper recognizes to judge and fingerprint it; its ingestion job reads the rest, with progress'],
  OCR_IDLE_MS: [int(60000, 0), 'Recognizers and their page-drawing processes idle this long are stopped (their memory freed); 0: stopped after each document'],
  REFETCH_AFTER_SECONDS: [
    int(86400, 0),
    "A sync downloads a known reference's file again, as a conditional request (ETag, Last-Modified), once this long has passed since its last download; a file whose text changed is ingested again (0: at every sync)",
  ],
  DUPLICATE_HAMMING_THRESHOLD: [int(3), 'SimHash Hamming distance at or below which a document is a duplicate'],
  RERANK_CACHE_TTL_SECONDS: [int(900), 'Rerank cache time-to-live'],
  CHUNK_CACHE_TTL_SECONDS: [int(3600), 'Chunk text cache time-to-live'],
  HNSW_EF_SEARCH: [int(200, 1), 'Candidate list of an HNSW search (hnsw.ef_search; at least twice K, at most 1000): higher is more exact and slower'],
  RETRIEVAL_EXACT_BELOW: [
    int(1000, 0),
    'Vector search without a namespace or textbook ranks every chunk exactly while the index holds fewer vectors than this, and goes through the HNSW index from there on (each exact distance reads a vector from TOAST: 15.6 ms for 3,000 chunks against 3.4 ms by the index)',
  ],
  RETRIEVAL_MODE: [
    z.enum(['hybrid', 'dense']).default('hybrid'),
    'hybrid: full-text search fused with the vector search (reciprocal rank fusion); dense: the vector search alone',
  ],
  RETRIEVAL_RRF_K: [int(60, 1), 'Reciprocal rank fusion constant k: a chunk scores w / (k + rank) in each branch'],
  RETRIEVAL_DENSE_DEPTH_FACTOR: [num(1, 0.1, 20), "Hybrid: the dense branch keeps this many times the tier's top-K before fusion"],
  RETRIEVAL_TEXT_DEPTH_FACTOR: [num(1, 0, 20), "Hybrid: the full-text branch keeps this many times the tier's top-K before fusion (0: no full-text branch)"],
  RETRIEVAL_DENSE_WEIGHT: [num(1, 0), 'Hybrid: weight of the dense branch in the fusion'],
  RETRIEVAL_TEXT_WEIGHT: [num(1, 0), 'Hybrid: weight of the full-text branch in the fusion'],
  RETRIEVAL_TEXT_COMMON: [
    num(0.2, 0, 1),
    "Hybrid: a word held by more than this share of the chunks adds to a chunk's text score but does not make it a match",
  ],
  RETRIEVAL_TEXT_POSTINGS: [
    int(400, 1),
    "Hybrid: the question's rarest words make the text match while the chunks holding them add up to this many (the rarest always): the text branch's work is bounded at any catalogue size",
  ],
  RERANK_TIMEOUT_MS: [int(5000, 1), 'Rerank slower than this falls back to dense order'],
  CIRCUIT_FAILURE_THRESHOLD: [int(3, 1), 'Chat-model failures that open the circuit'],
  CIRCUIT_WINDOW_SECONDS: [int(60, 1), 'Window in which those failures are counted'],
  CIRCUIT_RESET_SECONDS: [int(120, 1), 'Seconds without failure after which the circuit closes again'],
  // --- chat (POST /chat)
  CHAT_MESSAGE_MAX_CHARS: [int(2000, 1), 'Longest question accepted, in characters'],
  CHAT_HISTORY_MAX_MESSAGES: [int(10), 'Most earlier messages a request may carry as history'],
  CHAT_HISTORY_MAX_CHARS: [int(2000, 1), 'Longest history message, in characters'],
  CHAT_CHARS_PER_MODEL_TOKEN: [int(4, 1), 'Characters per model output token: the longest answer a tier allows is its max tokens times this'],
  CHAT_INFER_DEPTH: [int(12, 1), 'A question without subject is searched over the whole catalogue: hits looked at'],
  CHAT_INFER_VOTERS: [int(6, 1), 'Of those, the best ones that vote for their subject, each with its strength divided by its position'],
  CHAT_INFER_MIN_COVERAGE: [
    num(0.1, 0, 1),
    'Hybrid: a question counts as a curriculum question when its best hit holds this share of its word weight (idf)...',
  ],
  CHAT_INFER_MIN_SIMILARITY: [num(0.3, 0, 1), '...or when the nearest chunk has this cosine similarity (the only test of a dense-only search)'],
  CHAT_INFER_RERANK: [
    z.enum(['auto', 'on', 'off']).default('auto'),
    "Order the hits that vote for a subject by the provider's rerank, as the answer's pages are: auto = when the rerank runs on this machine (offline provider); on = also a model's (one more rerank call per inferred turn); off = the search's order",
  ],
  CHAT_INFER_TIE_RATIO: [
    num(0.8, 0, 1),
    'Two subjects whose votes are within this ratio are a tie (broken by the subject vocabulary, else the student is asked)',
  ],
  CHAT_HEARTBEAT_SECONDS: [int(15, 1), 'An SSE comment is sent after this long without an event'],
  CHAT_PERSIST_INTERVAL_MS: [
    int(250, 1),
    'An answer is written to chat_messages as it is generated, at most once this often (and at its end): what a client that reconnects, or another process, can read of it',
  ],
  CHAT_PERSIST_MAX_CHARS: [int(2000, 1), '...or as soon as this many characters wait to be written'],
  CHAT_TURN_LEASE_SECONDS: [
    int(30, 5),
    'A turn being generated renews its lease in the database at least every third of this; a turn whose lease ran out lost its process (a crash, kill -9) and is interrupted: its text kept, its hold released',
  ],
  CHAT_FOLLOW_POLL_MS: [int(250, 10), 'GET /chat/turns/{id} following an answer generated by another process reads the database this often'],
} as const satisfies Record<string, readonly [z.ZodType, string]>
