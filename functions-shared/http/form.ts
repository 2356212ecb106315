// A multipart/form-data body, read by the route that takes one (the upload) rather than by the OpenAPI
// router's validator: that one takes a boundary only unquoted, of letters, digits and a few signs, as the
// Content-Type's one parameter, and so answered 415 to boundaries RFC 2046 allows (quoted, holding a
// space) and to a Content-Type with another parameter before it.
import type { Context } from 'hono'
import { ApiError, ErrorCode } from './errors.ts'

const TOKEN = "[!#$%&'*+.^_`|~0-9A-Za-z-]+"
/** `; name=value`, the value a token or a quoted string (RFC 9110 §5.6.4, §5.6.6), one at a time from lastIndex. */
const PARAMETER = new RegExp(
  `[ \\t]*;[ \\t]*(?:(${TOKEN})=(?:(${TOKEN})|"((?:[\\t \\x21\\x23-\\x5b\\x5d-\\x7e\\x80-\\xff]|\\\\[\\t\\x20-\\x7e\\x80-\\xff])*)"))?`,
  'y',
)

/** A Content-Type's parameters (names in lower case), or null when they are not written as RFC 9110 §8.3.1 has them. */
export function contentTypeParameters(header: string): Map<string, string> | null {
  const start = header.indexOf(';')
  const params = new Map<string, string>()
  if (start < 0) return params
  // the whitespace before the first `;` belongs to it
  let at = header.slice(0, start).trimEnd().length
  while (at < header.length) {
    if (/^[ \t]*$/.test(header.slice(at))) break
    PARAMETER.lastIndex = at
    const m = PARAMETER.exec(header)
    if (!m) return null
    at = PARAMETER.lastIndex
    if (m[1] === undefined) continue // an empty parameter (`;;`)
    const name = m[1].toLowerCase()
    if (params.has(name)) return null // which one is meant cannot be told
    params.set(name, m[2] ?? m[3]!.replace(/\\(.)/g, '$1'))
  }
  return params
}

/** RFC 2046 §5.1.1: 1 to 70 characters of its set, the last one not a space. */
const BOUNDARY = /^[0-9A-Za-z'()+_,\-./:=? ]{0,69}[0-9A-Za-z'()+_,\-./:=?]$/

/**
 * The fields of a multipart/form-data body, a name sent more than once as an array of its values (which
 * no schema of ours takes). 415 for a body of another type (none included), 400 for a boundary RFC 2046
 * does not allow or a body that does not follow its boundary.
 */
export async function readMultipart(c: Context): Promise<Record<string, FormDataEntryValue | FormDataEntryValue[]>> {
  const header = c.req.header('content-type') ?? ''
  const type = header.split(';')[0]!.trim().toLowerCase()
  if (type !== 'multipart/form-data') {
    throw new ApiError(ErrorCode.UNSUPPORTED_MEDIA_TYPE, `This route takes a multipart/form-data body, not ${type ? type : 'a body without a Content-Type'}`)
  }
  const boundary = contentTypeParameters(header)?.get('boundary')
  if (boundary === undefined || !BOUNDARY.test(boundary)) {
    throw new ApiError(
      ErrorCode.BAD_REQUEST,
      "The Content-Type needs one boundary parameter of 1 to 70 characters (letters, digits, spaces and '()+_,-./:=?, not ending in a space), quoted when it holds a space",
    )
  }
  let form: FormData
  try {
    // the runtime's parser is given the boundary in the one form every runtime reads
    form = await new Response(await c.req.arrayBuffer(), { headers: { 'content-type': `multipart/form-data; boundary="${boundary}"` } }).formData()
  } catch (err) {
    if (err instanceof ApiError) throw err // a body past its limit fails as itself
    throw new ApiError(ErrorCode.BAD_REQUEST, 'The multipart/form-data body cannot be read: its parts do not follow the boundary its Content-Type gives')
  }
  const fields: Record<string, FormDataEntryValue | FormDataEntryValue[]> = Object.create(null)
  form.forEach((value, name) => {
    const seen = fields[name]
    fields[name] = seen === undefined ? value : Array.isArray(seen) ? [...seen, value] : [seen, value]
  })
  return fields
}
