// The horizontal rules a page draws, read from pdf.js's operator list: the fraction bars and radical
// overlines formulas.ts places a formula's parts by.

/** A horizontal rule of the page: its ends and its height (middle of its thickness), in page space. */
export interface Rule {
  x0: number
  x1: number
  y: number
}

type Matrix = [number, number, number, number, number, number]
/** a then b */
const multiply = (a: Matrix, b: Matrix): Matrix => [
  a[0] * b[0] + a[1] * b[2],
  a[0] * b[1] + a[1] * b[3],
  a[2] * b[0] + a[3] * b[2],
  a[2] * b[1] + a[3] * b[3],
  a[4] * b[0] + a[5] * b[2] + b[4],
  a[4] * b[1] + a[5] * b[3] + b[5],
]

/** The operators of pdf.js's operator list that this reading follows. */
export interface RuleOps {
  save: number
  restore: number
  transform: number
  constructPath: number
  endPath: number
  paintFormXObjectBegin: number
  paintFormXObjectEnd: number
}

/**
 * The horizontal rules a page draws (filled or stroked paths whose box is long and thin: at most 2 pt
 * high, at least three times as long), in page space, from pdf.js's operator list.
 */
export function horizontalRules(fnArray: readonly number[], argsArray: readonly unknown[], ops: RuleOps): Rule[] {
  const rules: Rule[] = []
  const stack: Matrix[] = []
  let ctm: Matrix = [1, 0, 0, 1, 0, 0]
  for (let i = 0; i < fnArray.length; i++) {
    const fn = fnArray[i]
    const args = argsArray[i] as unknown[] | null
    if (fn === ops.save) stack.push(ctm)
    else if (fn === ops.restore) ctm = stack.pop() ?? ctm
    else if (fn === ops.transform) ctm = multiply(args as unknown as Matrix, ctm)
    else if (fn === ops.paintFormXObjectBegin) {
      stack.push(ctm)
      if (Array.isArray(args?.[0])) ctm = multiply(args[0] as Matrix, ctm)
    } else if (fn === ops.paintFormXObjectEnd) ctm = stack.pop() ?? ctm
    else if (fn === ops.constructPath && args && args[0] !== ops.endPath) {
      const box = args[2] as ArrayLike<number> | null
      if (!box || ctm[1] !== 0 || ctm[2] !== 0) continue
      const [x0, x1] = [box[0]! * ctm[0] + ctm[4], box[2]! * ctm[0] + ctm[4]].sort((a, b) => a - b) as [number, number]
      const [y0, y1] = [box[1]! * ctm[3] + ctm[5], box[3]! * ctm[3] + ctm[5]].sort((a, b) => a - b) as [number, number]
      if (y1 - y0 <= 2 && x1 - x0 >= 3 * Math.max(y1 - y0, 0.5)) rules.push({ x0, x1, y: (y0 + y1) / 2 })
    }
  }
  return rules
}
