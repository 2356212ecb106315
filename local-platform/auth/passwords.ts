// Password hashes of the local auth server: bcrypt, as GoTrue stores them ("$2a$", the cost set by
// AUTH_BCRYPT_COST), made and checked by node.bcrypt.js (the native bcrypt, prebuilt) on Node's thread
// pool. pgcrypto's crypt() did it inside the database: on the embedded database that is Node's own thread
// and its one connection, so thirty wrong sign-ins (one client's allowance) held every other request,
// /health included, for about two seconds. The hashes are the same as before: pgcrypto's verify here, and
// these verify in pgcrypto.
import bcrypt from 'bcrypt'
import pLimit from 'p-limit'

/**
 * The hashes made or checked at once. Node's thread pool has four threads, and WebCrypto (every token's
 * HMAC check) runs on them too: a burst of wrong sign-ins that took all four made each request with a
 * token wait behind a bcrypt. Two leave it two threads (and, on a two-core machine, two cores keep it busy).
 */
export const BCRYPT_CONCURRENCY = 2
const limit = pLimit(BCRYPT_CONCURRENCY)

/** A new hash of `password` at `cost`, in GoTrue's and pgcrypto's form ($2a$). */
export const hashPassword = (password: string, cost: number): Promise<string> => limit(async () => bcrypt.hash(password, await bcrypt.genSalt(cost, 'a')))

/** Whether `password` is the one `stored` was made of; false for a stored value that is no bcrypt hash. */
export const verifyPassword = (password: string, stored: string): Promise<boolean> => limit(() => bcrypt.compare(password, stored))
