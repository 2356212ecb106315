// Lessons for the OCR tests, two pages each with different content, and ways to damage Arabic text the
// way broken PDF text layers do. The scans themselves are made by the tests (makeScannedPdf): typeset,
// rendered, put back as images.

export const SCAN_FR = [
  "Leçon 5 : la photosynthèse. Les plantes vertes fabriquent leur matière organique à partir de l'eau, du dioxyde de carbone et de la lumière du soleil. Cette transformation a lieu dans les chloroplastes des cellules des feuilles, qui contiennent la chlorophylle.",
  "La respiration cellulaire. Toutes les cellules vivantes respirent : elles consomment du dioxygène et rejettent du dioxyde de carbone. Le glucose est dégradé dans les mitochondries et l'énergie libérée sert au fonctionnement de la cellule, le jour comme la nuit.",
]

export const SCAN_AR = [
  'الدرس السادس: نهر السنغال. ينبع نهر السنغال من مرتفعات فوتا جالون في غينيا، ويجري نحو الشمال ثم الغرب حتى يصب في المحيط الأطلسي قرب مدينة سانلوي. ويشكل النهر الحدود الجنوبية لموريتانيا.',
  'الزراعة على ضفاف النهر: يزرع السكان في منطقة الضفة الأرز والذرة والخضروات، ويعتمدون على الفيضان السنوي الذي يغمر الأراضي ويترك فيها الطمي الخصب. وقد أقيمت سدود لتنظيم مياه الري.',
]

/** Lam-alef reversed as some fonts' shaping leaves it in the text layer: "الإسلام" → "اإلسالم". */
export function reverseLamAlef(text: string): string {
  return text.replace(/\u0644([\u0627\u0623\u0625\u0622])/g, '$1\u0644')
}

/** Words split where their shaping changed, the pieces in the wrong order: "حركة" → "كة حر". */
export function splitWords(text: string): string {
  return text
    .split(' ')
    .map((w) => {
      const letters = Array.from(w)
      if (letters.length < 4 || !/[\u0621-\u064A]/.test(w)) return w
      const cut = Math.floor(letters.length / 2)
      return `${letters.slice(cut).join('')} ${letters.slice(0, cut).join('')}`
    })
    .join(' ')
}

/** Character error rate: edit distance over the reference's length. */
export function characterErrorRate(reference: string, hypothesis: string): number {
  const a = Array.from(reference)
  const b = Array.from(hypothesis)
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j)
  for (let i = 1; i <= a.length; i++) {
    const row = [i]
    for (let j = 1; j <= b.length; j++) row[j] = Math.min(previous[j]! + 1, row[j - 1]! + 1, previous[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1))
    previous = row
  }
  return a.length === 0 ? 0 : previous[b.length]! / a.length
}
