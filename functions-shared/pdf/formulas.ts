// Formulas read from the glyphs' place, as a student would type them. A typesetter draws a formula's parts
// where they go, and pdf.js gives them as runs in the order drawn, each with its baseline and size: read
// as plain runs, "u_{n+1}" comes out "un+1", "q^n" as "q n", a fraction's numerator and denominator run
// into the sentence, a radical's sign on a line of its own. The forms written instead:
// - a run raised (lowered) above (under) the run before it, in a smaller size, is a superscript
//   (subscript): in Unicode's superscript (subscript) characters when every character has one (x², qⁿ⁺¹,
//   uₙ₊₁, 10⁻³), else as ^(...) (_(...)): E_(c), x^(q);
// - a stacked fraction, a numerator and a denominator centred on the rule drawn between them, is
//   numerator/denominator, each part in parentheses unless it is one number or one letter:
//   (1 − qⁿ⁺¹)/(1 − q), 1/2;
// - a radical sign followed by the rule drawn over its radicand is √(radicand): √(Δ), √(b² − 4ac).
// A formula stays in its sentence. The rules are read from the page's drawing operators, only on pages
// whose runs show a formula (needsRules): they cost a second pass over the page.
import type { Rule } from './rules.ts'
import { ARABIC, baseline, blank, fontSize, left, right, type TextRun, upright } from './text-runs.ts'

const table = (from: string, to: string) => Object.fromEntries(Array.from(from).map((c, i) => [c, Array.from(to)[i]!]))
const SUPERSCRIPT: Record<string, string> = {
  ...table('0123456789+-\u2212=()', '⁰¹²³⁴⁵⁶⁷⁸⁹⁺⁻⁻⁼⁽⁾'),
  ...table('abcdefghijklmnoprstuvwxyz', 'ᵃᵇᶜᵈᵉᶠᵍʰⁱʲᵏˡᵐⁿᵒᵖʳˢᵗᵘᵛʷˣʸᶻ'),
  ...table('ABDEGHIJKLMNOPRTUVW', 'ᴬᴮᴰᴱᴳᴴᴵᴶᴷᴸᴹᴺᴼᴾᴿᵀᵁⱽᵂ'),
  // a prime is drawn raised already
  ...table("′″‴'*", '′″‴′*'),
}
const SUBSCRIPT: Record<string, string> = {
  ...table('0123456789+-\u2212=()', '₀₁₂₃₄₅₆₇₈₉₊₋₋₌₍₎'),
  ...table('aehijklmnoprstuvx', 'ₐₑₕᵢⱼₖₗₘₙₒₚᵣₛₜᵤᵥₓ'),
}

/** A raised or lowered run's text in the documented form. */
export function scriptForm(text: string, kind: 'sup' | 'sub'): string {
  const plain = mathLetters(text).replace(/\s+/g, ' ').trim()
  const chars = Array.from(plain.replace(/ /g, ''))
  const forms = kind === 'sup' ? SUPERSCRIPT : SUBSCRIPT
  if (chars.length > 0 && chars.every((c) => forms[c])) return chars.map((c) => forms[c]).join('')
  return `${kind === 'sup' ? '^' : '_'}(${plain})`
}

/** Mathematical alphanumeric symbols (𝑥, 𝐾: the italic letters of a Unicode maths font) as the letters they are. */
export const mathLetters = (text: string): string => text.replace(/[\u{1D400}-\u{1D7FF}\u210E]/gu, (c) => c.normalize('NFKC'))

const formulaRun = (r: TextRun) => !blank(r) && upright(r) && !ARABIC.test(r.str)
const RADICAL = /^\s*√\s*$/

/**
 * Whether the page's runs may hold a stacked fraction or a radical, so that its rules are worth reading:
 * a radical sign drawn alone, or a run that starts lower than the run before and left of its end without
 * going back to where that line starts (a denominator under its numerator, not a new line).
 */
export function needsRules(runs: readonly TextRun[]): boolean {
  // where the lines of the passage start (a passage: lines less than 2.5 sizes apart)
  let lineStart = Infinity
  let prev: TextRun | undefined
  for (const r of runs) {
    if (r.str === '') continue
    if (RADICAL.test(r.str)) return true
    if (!prev || Math.abs(baseline(prev) - baseline(r)) > fontSize(r) * 2.5) lineStart = left(r)
    // (a denominator is short)
    else if (formulaRun(r) && formulaRun(prev) && r.width < fontSize(r) * 15 && denominatorAfter(prev, r) && left(r) > lineStart + fontSize(r)) return true
    lineStart = Math.min(lineStart, left(r))
    prev = r
  }
  return false
}

/** Whether `next` starts lower than `prev`, left of its end: a line under it, begun inside it. */
const denominatorAfter = (prev: TextRun, next: TextRun) =>
  baseline(next) < baseline(prev) - fontSize(next) * 0.3 && baseline(prev) - baseline(next) < fontSize(next) * 3 &&
  left(next) < right(prev) - fontSize(next) * 0.3

/** The runs with the formulas they hold written in the documented forms (see the top of this file). */
export function readFormulas(runs: readonly TextRun[], rules: readonly Rule[]): TextRun[] {
  return attachScripts(radicals(fractions(runs, rules), rules))
}

/** Each run raised or lowered after its base, smaller, written onto the base in its form. */
export function attachScripts(runs: readonly TextRun[]): TextRun[] {
  const out: TextRun[] = []
  let base: TextRun | undefined
  // the base's scripts, in the order drawn; the empty runs pdf.js puts where the baseline moved
  let scripts: { kind: 'sup' | 'sub'; y: number; x: number; text: string; last: TextRun }[] = []
  let markers: TextRun[] = []
  const close = () => {
    if (base && scripts.length > 0) {
      // a subscript and a superscript stacked on one place are written subscript first (SO₄²⁻)
      const size = fontSize(base)
      const ordered = [...scripts].sort((a, b) => (Math.abs(a.x - b.x) < size * 0.2 ? (a.kind === 'sub' ? -1 : 1) - (b.kind === 'sub' ? -1 : 1) : 0))
      base.str += ordered.map((s) => scriptForm(s.text, s.kind)).join('')
      const last = scripts.reduce((a, b) => (right(b.last) > right(a.last) ? b : a)).last
      base.width = Math.max(base.width, right(last) - left(base))
      base.hasEOL = scripts.at(-1)!.last.hasEOL
    }
    scripts = []
    out.push(...markers)
    markers = []
  }
  for (const r of runs) {
    if (base && r.str === '' && r.width === 0) {
      markers.push(r)
      continue
    }
    // a blank drawn inside the scripts' reach (a subscript under a longer superscript) is no word space
    if (base && scripts.length > 0 && blank(r) && !r.hasEOL && right(r) <= Math.max(...scripts.map((x) => right(x.last))) + fontSize(base) * 0.1) continue
    const size = base ? fontSize(base) : 0
    const dy = base ? baseline(r) - baseline(base) : 0
    const current = scripts.at(-1)
    const reach = current ? Math.max(...scripts.map((s) => right(s.last))) : base ? right(base) : 0
    if (
      base && !base.hasEOL && formulaRun(r) && fontSize(r) < size * 0.85 && Math.abs(dy) > size * 0.08 && Math.abs(dy) < size * 0.9 &&
      left(r) >= left(base) && left(r) <= reach + size * 0.3
    ) {
      markers = []
      const kind = dy > 0 ? 'sup' : 'sub'
      if (current && current.kind === kind && Math.abs(baseline(r) - current.y) < size * 0.1) {
        current.text += r.str
        current.last = r
      } else scripts.push({ kind, y: baseline(r), x: left(r), text: r.str, last: r })
      continue
    }
    close()
    const copy = { ...r }
    out.push(copy)
    base = formulaRun(copy) ? copy : undefined
  }
  close()
  return out
}

/** A fraction's part in the documented form: in parentheses unless one number or one letter. */
const part = (text: string) => (/^(?:\d+(?:[.,]\d+)?|\p{L})$/u.test(text) ? text : `(${text})`)

/** Runs read as one piece of text: a space where two stand apart, none where they touch. */
export function runsText(runs: readonly TextRun[]): string {
  let text = ''
  let prev: TextRun | undefined
  for (const r of runs) {
    if (prev && !blank(prev) && !blank(r) && left(r) - right(prev) > fontSize(r) * 0.12) text += ' '
    text += r.str
    prev = r
  }
  return text.replace(/\s+/g, ' ').trim()
}

/** Whether a run lies within a rule's span (a little past its ends allowed). */
const within = (r: TextRun, rule: Rule) => left(r) >= rule.x0 - fontSize(r) * 0.3 && right(r) <= rule.x1 + fontSize(r) * 0.3

/** Stacked fractions (a numerator over a rule over a denominator) as one run each. */
function fractions(runs: readonly TextRun[], rules: readonly Rule[]): TextRun[] {
  if (rules.length === 0) return [...runs]
  const out = [...runs]
  for (let j = 1; j < out.length; j++) {
    const d = out[j]!
    let p = j - 1
    while (p >= 0 && (blank(out[p]!) || out[p]!.str === '')) p--
    const n = out[p]
    if (!n || !formulaRun(d) || !formulaRun(n) || !denominatorAfter(n, d)) continue
    const size = Math.max(fontSize(n), fontSize(d))
    const rule = rules.find((r) =>
      r.y > baseline(d) && r.y < baseline(n) && within(d, r) && within(n, r) && baseline(n) - r.y < size * 2 && r.y - baseline(d) < size * 2.5
    )
    if (!rule) continue
    // the numerator: the runs before, above the rule and within its span; the denominator: the runs from j, under it
    let start = p
    while (start > 0 && within(out[start - 1]!, rule) && baseline(out[start - 1]!) > rule.y && !out[start - 1]!.hasEOL) start--
    while (blank(out[start]!)) start++
    let end = j
    while (end + 1 < out.length && formulaRun(out[end + 1]!) && within(out[end + 1]!, rule) && baseline(out[end + 1]!) < rule.y && !out[end]!.hasEOL) end++
    const numerator = out.slice(start, p + 1)
    const denominator = out.slice(j, end + 1)
    const centre = (rs: readonly TextRun[]) => (Math.min(...rs.map(left)) + Math.max(...rs.map(right))) / 2
    const ruleCentre = (rule.x0 + rule.x1) / 2
    const widest = Math.max(...[...numerator, ...denominator].map(right)) - Math.min(...[...numerator, ...denominator].map(left))
    // both parts centred on the rule, the rule about as long as the wider part, and each part one piece of
    // text (no gap wider than a few spaces): a fraction, not a table's line between two rows of cells (a
    // table of variations, its values spread under its header)
    const gapped = (rs: readonly TextRun[]) => {
      const drawn = rs.filter((r) => !blank(r)).sort((a, b) => left(a) - left(b))
      return drawn.some((r, k) => k > 0 && left(r) - Math.max(...drawn.slice(0, k).map(right)) > size * 1.5)
    }
    if (
      Math.abs(centre(numerator) - ruleCentre) > size * 0.6 || Math.abs(centre(denominator) - ruleCentre) > size * 0.6 ||
      rule.x1 - rule.x0 > widest + size * 1.5 || gapped(numerator) || gapped(denominator)
    ) continue
    const before = out.slice(0, start).reverse().find((r) => !blank(r))
    const onLine = before && Math.abs(baseline(before) - (rule.y - size * 0.25)) < size
    // the blank runs inside the fraction's box (a typesetter's room after the denominator), and those
    // between a sign and the fraction it makes negative (α = −b/(2a)): a sign after a relation, an opening
    // bracket or a space reads with the fraction
    while (
      end + 1 < out.length && blank(out[end + 1]!) && out[end + 1]!.str !== '' &&
      right(out[end + 1]!) <= Math.max(rule.x1, ...numerator.map(right), ...denominator.map(right)) + size * 0.3
    ) end++
    const beforeSign = before ? out.slice(0, out.indexOf(before)).reverse()[0] : undefined
    const signed = before && onLine && /[−\-+±]$/.test(before.str) &&
      (before.str.trim().length > 1 ? /[=<>≤≥≠(\[]\s*[−\-+±]$/.test(before.str) : !beforeSign || blank(beforeSign) || /[=<>≤≥≠(\[]$/.test(beforeSign.str))
    if (signed) { while (start > 0 && blank(out[start - 1]!) && out[start - 1]!.width < fontSize(before) * 0.4) start-- }
    // a factor right after the fraction is written a space apart: 1/2 mv², not 1/2mv²
    const next = out.slice(end + 1).find((r) => !blank(r))
    const factor = next && Math.abs(baseline(next) - rule.y) < size * 1.5 && /^[\p{L}\p{N}(√]/u.test(next.str) ? ' ' : ''
    const text = `${part(runsText(readFormulas(numerator, rules)))}/${part(runsText(readFormulas(denominator, rules)))}${factor}`
    // the fraction's box: its parts and rule, and the little room a typesetter leaves each side of it
    // (TeX's null delimiter space, 1.2 pt), which is no word space
    const room = size * 0.15
    const x0 = signed ? right(before) : Math.min(rule.x0, ...numerator.map(left), ...denominator.map(left)) - room
    const lineSize = onLine ? fontSize(before) : size
    const fraction: TextRun = {
      str: text,
      dir: 'ltr',
      transform: [lineSize, 0, 0, lineSize, x0, onLine ? baseline(before) : rule.y - lineSize * 0.25],
      width: Math.max(rule.x1, ...numerator.map(right), ...denominator.map(right)) + room - x0,
      height: lineSize,
      hasEOL: out[end]!.hasEOL,
    }
    out.splice(start, end - start + 1, fraction)
    j = start
  }
  return out
}

/** Each radical sign with the rule over its radicand, and the radicand, as one run: √(radicand). */
function radicals(runs: readonly TextRun[], rules: readonly Rule[]): TextRun[] {
  if (rules.length === 0 || !runs.some((r) => RADICAL.test(r.str))) return [...runs]
  const out = [...runs]
  for (let i = 0; i < out.length - 1; i++) {
    const sign = out[i]!
    if (!RADICAL.test(sign.str)) continue
    const size = fontSize(sign)
    const first = out[i + 1]!
    const rule = rules.find((r) =>
      Math.abs(r.x0 - right(sign)) < size * 0.4 && r.x1 > left(first) && r.y > baseline(first) + fontSize(first) * 0.4 && r.y - baseline(first) < size * 2
    )
    if (!rule) continue
    // the radicand: the runs that start under the rule; the last one cut where the rule ends
    let end = i + 1
    while (end + 1 < out.length && !out[end]!.hasEOL && left(out[end + 1]!) < rule.x1 - size * 0.2 && baseline(out[end + 1]!) < rule.y) end++
    const radicand = out.slice(i + 1, end + 1)
    const last = radicand.at(-1)!
    let rest: TextRun | undefined
    if (right(last) > rule.x1 + size * 0.3 && last.width > 0) {
      const chars = Array.from(last.str)
      const cut = nearestBreak(chars, Math.round(((rule.x1 - left(last)) / last.width) * chars.length))
      const restWidth = (last.width * (chars.length - cut)) / chars.length
      rest = { ...last, str: chars.slice(cut).join(''), transform: [...last.transform.slice(0, 4), right(last) - restWidth, baseline(last)], width: restWidth }
      radicand[radicand.length - 1] = { ...last, str: chars.slice(0, cut).join(''), width: last.width - restWidth, hasEOL: false }
    }
    const inside = runsText(attachScripts(radicand))
    const merged: TextRun = {
      ...first,
      str: `√(${inside})`,
      transform: [...first.transform.slice(0, 4), left(sign), baseline(first)],
      width: Math.max(rule.x1, right(radicand.at(-1)!)) - left(sign),
      hasEOL: rest ? false : last.hasEOL,
    }
    out.splice(i, end - i + 1, ...(rest ? [merged, rest] : [merged]))
  }
  return out
}

/** The place nearest `at` among the places between words (a space's, or the end). */
function nearestBreak(chars: readonly string[], at: number): number {
  let best = chars.length
  for (let k = 0; k <= chars.length; k++) if ((k === chars.length || chars[k] === ' ') && Math.abs(k - at) < Math.abs(best - at)) best = k
  return best
}
