// The subject a question is about, when the request does not say it: stems of each subject's
// vocabulary in French and Arabic, matched on accent- and diacritic-free words. The subject with the
// most matches wins; a tie or no match means the subject cannot be inferred (decide_path then asks).
// The keys are the subject slugs of the scraper sources (config/scraper-sources.json).

const LEXICON: Record<string, { fr: string[]; ar: string[] }> = {
  mathematiques: {
    fr: ['equation', 'inequation', 'fonction', 'derivee', 'deriver', 'integral', 'primitive', 'limite', 'suite', 'probabilit', 'matrice', 'vecteur', 'geometri', 'triangle', 'polynom', 'logarithm', 'exponentiel', 'theoreme', 'math', 'algebr', 'arithmeti', 'fraction', 'inconnue', 'racine', 'trigonometr', 'statisti', 'barycentre', 'complexe'],
    ar: ['معادل', 'داله', 'دالة', 'مشتق', 'تكامل', 'متتالي', 'احتمال', 'هندس', 'مثلث', 'رياضيات', 'حساب', 'كثير الحدود', 'لوغاريتم', 'مبرهن', 'مجهول', 'جذر', 'مصفوف', 'متجه'],
  },
  physique: {
    fr: ['onde', 'celerite', 'force', 'energie', 'vitesse', 'acceleration', 'tension', 'courant', 'circuit', 'resistan', 'lumiere', 'mecanique', 'electri', 'physique', 'frequence', 'chimi', 'atome', 'molecul', 'reaction', 'oscillat', 'condensateur', 'bobine', 'gravit', 'newton', 'optique', 'lentille', 'radioacti'],
    ar: ['فيزياء', 'فيزيا', 'موجة', 'موجات', 'سرعة', 'قوة', 'طاقة', 'تيار', 'توتر', 'كهرباء', 'كهربا', 'ضوء', 'ميكانيك', 'كيمياء', 'ذرة', 'تفاعل', 'تردد', 'مكثف', 'عدسة', 'جاذبي'],
  },
  'sciences-naturelles': {
    fr: ['cellul', 'adn', 'genetique', 'gene', 'photosynthese', 'plante', 'digestion', 'respiration', 'immunit', 'ecosysteme', 'neurone', 'svt', 'biologi', 'chromosome', 'mitose', 'meiose', 'proteine', 'enzyme', 'hormone', 'geologi', 'volcan', 'seisme', 'reproduction', 'sang'],
    ar: ['خلية', 'خلايا', 'وراث', 'تنفس', 'هضم', 'مناعة', 'نبات', 'علوم طبيعية', 'صبغي', 'بروتين', 'انزيم', 'هرمون', 'عصب', 'تكاثر', 'بركان', 'زلزال', 'احياء'],
  },
  'education-islamique': {
    fr: ['islam', 'priere', 'zakat', 'jeune', 'ramadan', 'coran', 'hadith', 'prophete', 'pilier', 'ablution', 'pelerinage', 'hajj', 'fiqh', 'tawhid', 'sourate', 'mosquee'],
    ar: ['اسلام', 'صلاة', 'صلوات', 'زكاة', 'صوم', 'صيام', 'رمضان', 'قران', 'حديث', 'النبي', 'الرسول', 'اركان', 'ركن', 'وضوء', 'حج', 'توحيد', 'فقه', 'سورة', 'مسجد', 'عبادة', 'شهادت', 'الدين'],
  },
  arabe: {
    fr: ['grammaire arabe', 'langue arabe', 'poesie arabe', 'conjugaison arabe'],
    ar: ['نحو', 'اعراب', 'الفاعل', 'المفعول', 'مبتدا', 'الخبر', 'بلاغة', 'الشعر', 'عروض', 'صرف', 'اللغة العربية', 'قصيدة', 'الجملة', 'فعل ماض', 'فعل مضارع', 'النعت', 'الاستعارة', 'التشبيه'],
  },
  histoire: {
    fr: ['histoire', 'historique', 'guerre', 'colonisation', 'colonial', 'independance', 'empire', 'almoravide', 'siecle', 'revolution', 'royaume', 'dynastie', 'traite', 'decolonisation', 'mondiale'],
    ar: ['تاريخ', 'استعمار', 'استقلال', 'الحرب', 'حرب', 'المرابطين', 'دولة', 'حضارة', 'امبراطوري', 'ثورة', 'مملكة', 'القرن'],
  },
}

/** Lowercase, without Latin accents, Arabic diacritics and tatweel; hamza forms of alif, ta marbuta and alif maqsura folded. */
export function normalizeWords(text: string): string {
  return text
    .normalize('NFKD')
    .replace(/[\u0300-\u036f\u064B-\u065F\u0670\u0640]/g, '')
    .replace(/[\u0622\u0623\u0625\u0671]/g, '\u0627')
    .replace(/\u0629/g, '\u0647') // ta marbuta as ha
    .replace(/\u0649/g, '\u064A') // alif maqsura as ya
    .toLowerCase()
    .replace(/[^\p{L}\p{N}]+/gu, ' ')
    .trim()
}

const normalizedLexicon = Object.entries(LEXICON).map(([subject, { fr, ar }]) => ({
  subject,
  fr: fr.map(normalizeWords),
  ar: ar.map(normalizeWords),
}))

/** Matches per known subject in `text`. */
export function subjectScores(text: string): Map<string, number> {
  const norm = ` ${normalizeWords(text)} `
  const words = norm.trim().split(' ')
  const scores = new Map<string, number>()
  for (const { subject, fr, ar } of normalizedLexicon) {
    let score = 0
    for (const stem of fr) {
      if (stem.includes(' ')) score += norm.includes(` ${stem}`) ? 2 : 0
      else score += words.some((w) => w.startsWith(stem)) ? 1 : 0
    }
    // Arabic words carry prefixes (ال، و، ب، ل) and suffixes: a stem anywhere in a word counts
    for (const stem of ar) score += norm.includes(stem) ? 1 : 0
    if (score > 0) scores.set(subject, score)
  }
  return scores
}

/** The one subject that matches best, or null when none matches or the best ones tie. */
export function inferSubject(text: string): string | null {
  const ranked = [...subjectScores(text)].sort((a, b) => b[1] - a[1])
  if (ranked.length === 0) return null
  if (ranked.length > 1 && ranked[1]![1] === ranked[0]![1]) return null
  return ranked[0]![0]
}

export const KNOWN_SUBJECTS = Object.keys(LEXICON)
