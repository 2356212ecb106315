// Prefer, read as PostgREST reads it (RFC 7240, comma-separated, across headers; the first value of a
// kind wins): return, count, resolution, missing, tx, handling, timezone, max-affected. A preference it
// does not know is ignored, or refused with PGRST122 under handling=strict; Preference-Applied names what
// was honoured.
import { RestError } from './errors.ts'

export interface Preferences {
  representation: 'full' | 'minimal' | 'headers-only' | null
  count: 'exact' | 'planned' | 'estimated' | null
  resolution: 'merge-duplicates' | 'ignore-duplicates' | null
  missing: 'default' | 'null' | null
  tx: 'commit' | 'rollback' | null
  handling: 'strict' | 'lenient' | null
  timezone: string | null
  maxAffected: number | null
  /** the Preference-Applied header's value, or null */
  applied: string | null
}

export const KNOWN: Record<string, [keyof Preferences, string]> = {
  'return=representation': ['representation', 'full'],
  'return=minimal': ['representation', 'minimal'],
  'return=headers-only': ['representation', 'headers-only'],
  'count=exact': ['count', 'exact'],
  'count=planned': ['count', 'planned'],
  'count=estimated': ['count', 'estimated'],
  'resolution=merge-duplicates': ['resolution', 'merge-duplicates'],
  'resolution=ignore-duplicates': ['resolution', 'ignore-duplicates'],
  'missing=default': ['missing', 'default'],
  'missing=null': ['missing', 'null'],
  'tx=commit': ['tx', 'commit'],
  'tx=rollback': ['tx', 'rollback'],
  'handling=strict': ['handling', 'strict'],
  'handling=lenient': ['handling', 'lenient'],
}

export function preferences(header: string | undefined): Preferences {
  const prefs: Preferences = {
    representation: null,
    count: null,
    resolution: null,
    missing: null,
    tx: null,
    handling: null,
    timezone: null,
    maxAffected: null,
    applied: null,
  }
  const invalid: string[] = []
  const values = (header ?? '').split(',').map((p) => p.trim()).filter((p) => p !== '')
  for (const value of values) {
    const known = KNOWN[value]
    if (known) {
      const [key, v] = known
      if (prefs[key] === null) (prefs as unknown as Record<string, unknown>)[key] = v
    } else if (value.startsWith('timezone=')) prefs.timezone ??= value.slice('timezone='.length)
    else if (/^max-affected=\d{1,9}$/.test(value)) prefs.maxAffected ??= Number(value.slice('max-affected='.length))
    else invalid.push(value)
  }
  if (prefs.handling === 'strict' && invalid.length > 0) {
    throw new RestError(400, 'PGRST122', 'Invalid preferences given with handling=strict', `Invalid preferences: ${invalid.join(', ')}`)
  }
  // max-affected takes effect with handling=strict only, as in PostgREST
  if (prefs.handling !== 'strict') prefs.maxAffected = null
  return prefs
}

/** The Preference-Applied value for what was honoured (the timezone once it was found valid). */
export function appliedHeader(p: Preferences, timezoneApplied: boolean): string | null {
  const parts = [
    p.resolution && `resolution=${p.resolution}`,
    p.missing && `missing=${p.missing}`,
    p.representation && `return=${p.representation === 'full' ? 'representation' : p.representation}`,
    p.count && `count=${p.count}`,
    p.tx && `tx=${p.tx}`,
    p.handling && `handling=${p.handling}`,
    timezoneApplied && p.timezone && `timezone=${p.timezone}`,
    p.maxAffected !== null && `max-affected=${p.maxAffected}`,
  ].filter((x): x is string => typeof x === 'string')
  return parts.length === 0 ? null : parts.join(', ')
}
