// A scanned page put straight before it is recognized. A page laid on a scanner a little askew has its
// lines of text at an angle; the recognizer finds fewer of its words (Arabic lessons scanned 1.5° askew:
// 66 % of their content words found, 78 % straight). The angle is the one at which the page's dark pixels,
// summed along rows, make the sharpest profile (lines of text and the gaps between them): the
// projection-profile method, searched from -MAX_SKEW to +MAX_SKEW degrees on a reduced copy, coarse then
// fine.

/** Angles searched, in degrees either way: a page set askew by hand, not a page turned on its side. */
export const MAX_SKEW = 4
/** Angles under this are left alone (a rotation blurs a little). */
export const MIN_SKEW = 0.15

/** The share of each side of a page left out of the search (its margins). */
const MARGIN = 0.06
/** A row or column with more than this share of ink is a rule, a bar or an edge, not text. */
const SOLID = 0.5

/** Gray levels of an RGBA image under which a pixel is ink (a page is dark text on light paper). */
function inkThreshold(rgba: Uint8ClampedArray): number {
  // Otsu's threshold over luminance
  const histogram = new Array<number>(256).fill(0)
  for (let i = 0; i < rgba.length; i += 4) histogram[(rgba[i]! * 299 + rgba[i + 1]! * 587 + rgba[i + 2]! * 114) / 1000 | 0]!++
  const total = rgba.length / 4
  let sum = 0
  for (let t = 0; t < 256; t++) sum += t * histogram[t]!
  let sumBelow = 0
  let below = 0
  let best = 0
  let threshold = 128
  for (let t = 0; t < 256; t++) {
    below += histogram[t]!
    if (below === 0) continue
    const above = total - below
    if (above === 0) break
    sumBelow += t * histogram[t]!
    const between = below * above * (sumBelow / below - (sum - sumBelow) / above) ** 2
    if (between > best) {
      best = between
      threshold = t
    }
  }
  return threshold
}

/**
 * The skew of a page image in degrees: the angle its lines of text are turned by, clockwise (on a canvas,
 * whose y grows downwards, rotate(-angle) puts them straight); 0 when the page has too little ink to tell.
 */
export function skewAngle(rgba: Uint8ClampedArray, width: number, height: number): number {
  // ink pixels of a copy at most ~800 pixels wide, inside the page's margins (a scanner's dark edges
  // and the shadow of a binding lie there), without rows or columns that are mostly ink (rules, bars):
  // their own edge would make the sharpest profile at whatever angle they have
  const step = Math.max(1, Math.floor(width / 800))
  const threshold = inkThreshold(rgba)
  const w = Math.floor(width / step)
  const h = Math.floor(height / step)
  const ink = new Uint8Array(w * h)
  const [x0, x1, y0, y1] = [Math.floor(w * MARGIN), Math.ceil(w * (1 - MARGIN)), Math.floor(h * MARGIN), Math.ceil(h * (1 - MARGIN))]
  const rowInk = new Uint32Array(h)
  const columnInk = new Uint32Array(w)
  for (let y = y0; y < y1; y++) {
    for (let x = x0; x < x1; x++) {
      const i = (y * step * width + x * step) * 4
      if ((rgba[i]! * 299 + rgba[i + 1]! * 587 + rgba[i + 2]! * 114) / 1000 < threshold) {
        ink[y * w + x] = 1
        rowInk[y]!++
        columnInk[x]!++
      }
    }
  }
  const xs: number[] = []
  const ys: number[] = []
  for (let y = y0; y < y1; y++) {
    if (rowInk[y]! > (x1 - x0) * SOLID) continue
    for (let x = x0; x < x1; x++) {
      if (ink[y * w + x] && columnInk[x]! <= (y1 - y0) * SOLID) {
        xs.push(x)
        ys.push(y)
      }
    }
  }
  if (xs.length < 200) return 0
  const rows = h + w + 2
  const offset = w + 1
  const profile = new Float64Array(rows)
  const sharpness = (degrees: number): number => {
    const t = Math.tan((degrees * Math.PI) / 180)
    profile.fill(0)
    for (let k = 0; k < xs.length; k++) profile[Math.round(ys[k]! - xs[k]! * t) + offset]!++
    let s = 0
    for (let r = 1; r < rows; r++) s += (profile[r]! - profile[r - 1]!) ** 2
    return s
  }
  let best = 0
  let bestScore = sharpness(0)
  for (
    const [from, to, by] of [
      [-MAX_SKEW, MAX_SKEW, 0.25],
      [-0.25, 0.25, 0.05],
    ] as const
  ) {
    const center = from === -MAX_SKEW ? 0 : best
    for (let a = center + from; a <= center + to + 1e-9; a += by) {
      const score = sharpness(a)
      if (score > bestScore) {
        bestScore = score
        best = a
      }
    }
  }
  return Math.round(best * 100) / 100
}
