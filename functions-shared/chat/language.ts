// The question's language when the request does not say it: Latin script is French; Arabic script is
// Arabic, or Hassaniya when the text carries words (or the letter گ) that Modern Standard Arabic does not
// use. A heuristic: a client that knows better sends `language`.
export type ChatLanguage = 'fr' | 'ar' | 'hassaniya'

const HASSANIYA_WORDS = new Set([
  'شنهو',
  'شنهي',
  'اشنهو',
  'اشنهي',
  'شنو',
  'اشنو',
  'ياسر',
  'گاع',
  'ﮔاع',
  'امنين',
  'كيفتاش',
  'كيفاش',
  'اشحال',
  'مزال',
  'لاهي',
  'ماه',
  'اعل',
  'ذاك',
  'اتوف',
  'نبغي',
  'انگد',
  'نگد',
  'اعلاش',
  'ش',
  'الا',
  'حد',
  'شحال',
  'شحالك',
  'منهو',
  'منهي',
  'امنهو',
  'فين',
  'ماني',
  'اللي',
  'لاهو',
  'لاهي',
  'باش',
  'واعر',
  'ملان',
  'ابلا',
  'البارح',
  'فم',
  'ذو',
  'ذ',
  'ألا',
  'ماهو',
  'ماهي',
  'ماهُ',
  'ذي',
])
// words that are Hassaniya markers only together with another marker (common in MSA too)
const WEAK = new Set(['ش', 'الا', 'حد', 'ماه', 'ذاك', 'اعل', 'فين', 'اللي', 'فم', 'ذو', 'ذ', 'ألا', 'ماهو', 'ماهي', 'ماهُ', 'ذي', 'باش'])
/** a marker may carry the conjunction و or ف in front ("وشنهو", "فين" is kept whole) */
const marker = (w: string) => (HASSANIYA_WORDS.has(w) ? w : /^[وف]/u.test(w) && HASSANIYA_WORDS.has(w.slice(1)) ? w.slice(1) : null)

export function detectLanguage(text: string): ChatLanguage {
  const arabic = text.match(/\p{Script=Arabic}/gu)?.length ?? 0
  const latin = text.match(/\p{Script=Latin}/gu)?.length ?? 0
  if (arabic <= latin) return 'fr'
  if (/[گﮔ]/u.test(text)) return 'hassaniya'
  const words = text.split(/[^\p{L}]+/u).filter(Boolean)
  const markers = words.map(marker).filter((w): w is string => w !== null)
  const strong = markers.filter((w) => !WEAK.has(w)).length
  const weak = markers.filter((w) => WEAK.has(w)).length
  return strong > 0 || weak >= 2 ? 'hassaniya' : 'ar'
}
