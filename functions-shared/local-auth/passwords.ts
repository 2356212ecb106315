// Password hashes of the local auth server: bcrypt, as GoTrue stores them ("$2a$", the cost set by
// AUTH_BCRYPT_COST), made and checked by node.bcrypt.js (the native bcrypt, prebuilt) on Node's thread
// pool. pgcrypto's crypt() did it inside the database: on the embedded database that is Node's own thread
// and its one connection, so thirty wrong sign-ins (one client's allowance) held every other request,
// /health included, for about two seconds. The hashes are the same as before: pgcrypto's verify here, and
// these verify in pgcrypto.
import bcrypt from 'bcrypt'

/** A new hash of `password` at `cost`, in GoTrue's and pgcrypto's form ($2a$). */
export const hashPassword = async (password: string, cost: number): Promise<string> => bcrypt.hash(password, await bcrypt.genSalt(cost, 'a'))

/** Whether `password` is the one `stored` was made of; false for a stored value that is no bcrypt hash. */
export const verifyPassword = (password: string, stored: string): Promise<boolean> => bcrypt.compare(password, stored)
