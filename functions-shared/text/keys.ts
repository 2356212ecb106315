// Matching keys of words as the offline provider and the excerpts read them: words folded like the
// search index, then stemmed lightly (Arabic as Larkey's light10, French cut to five letters), and how much
// of a question's keys a text, or its best passage of three sentences, holds.
import { LRUCache } from 'lru-cache'
import { foldedWords, foldText } from './fold.ts'

// Light stemming of Arabic as Larkey's light10 does it: a leading wa-, the article with the particle
// it carries, then each suffix in turn; plus the alef of the accusative (tanwin) ending, so that
// مركزا meets المركز and فرنسا meets الفرنسي.
const ARABIC_ARTICLES = ['وال', 'بال', 'كال', 'فال', 'لل', 'ال']
const ARABIC_SUFFIXES = ['ها', 'ان', 'ات', 'ون', 'ين', 'يه', 'ه', 'ي', 'ا']
const FRENCH_STEM = 5
const FORMULA_LETTER = /^[befghikopqrtuvwxz\u03B1-\u03C9]$/
// French words of two letters (folded): function words and the few others a question holds; any other
// pair of Latin letters is a symbol or a unit (pH, Ka, Ec, OH, kg, km, kJ, mL, dt) and a key
const FRENCH_TWO_LETTER = new Set(
  'ai as au ca ce ci de du eh en es et eu ex il je la le lu ma me mi ne ni nu on ou qu sa se si su ta te tu un va vu'.split(' '),
)
const ALLAH = new Set(['الله', 'لله', 'بالله', 'فالله', 'تالله'])

/**
 * A word's matching key: folded like the search index (accents, Arabic diacritics and tatweel off,
 * alef forms, taa marbuta and alef maqsura folded), then stemmed lightly: an Arabic word loses a leading
 * wa- (three letters left), one article (two left), every wa- then at its start (three left) and each
 * suffix in turn (light10's order, three left); a Latin word loses a plural s or x and is cut to its
 * first five letters. Null for words too short to mean much; a Latin or Greek letter alone that can name
 * a quantity (x, t, u, v, f, Δ, λ) is its own key, and so are two Latin letters that are no French word
 * (pH, Ka, Ec, kJ: symbols and units).
 */
export function matchKey(word: string): string | null {
  return stem(foldText(word))
}

/** matchKey of a word already folded (lib/fold.ts). */
function stem(folded: string): string | null {
  let w = folded
  if (/\p{Script=Arabic}/u.test(w)) {
    if (w.startsWith('و') && w.length >= 4) w = w.slice(1)
    // the name of God is one word, not the article before له ("to him"), which is a function word
    if (ALLAH.has(w)) return 'الله'
    for (const p of ARABIC_ARTICLES) {
      if (w.startsWith(p) && w.length - p.length >= 2) {
        w = w.slice(p.length)
        break
      }
    }
    // wa- again after the article, and a second one: light10 takes it off the bare word only, so الواجب kept
    // it (واجب) where واجب lost it (اجب), and وولاتة ("and Oualata") never met ولاتة
    while (w.startsWith('و') && w.length >= 4) w = w.slice(1)
    for (const s of ARABIC_SUFFIXES) if (w.endsWith(s) && w.length - s.length >= 3) w = w.slice(0, -s.length)
    return w.length >= 2 ? w : null
  }
  // a letter alone names a quantity in a formula ("x(t)", "u fois v", "(u v)'", "Δ", "λ"): a key, except
  // the letters that are French words or elisions (a, à, y; l', d', s', n', c', j', m')
  if (FORMULA_LETTER.test(w)) return w
  if (w.length === 2 && /^[a-z]{2}$/.test(w)) return FRENCH_TWO_LETTER.has(w) ? null : w
  if (w.length <= 2 && !/\d/.test(w)) return null
  if (w.length > 3) w = w.replace(/[sx]$/, '')
  return w.slice(0, FRENCH_STEM)
}

// function words of French, Arabic and Hassaniya (as keys): they say nothing of which page answers; the
// second Arabic line, the fillers of Hassaniya questions and exercise words, as the search form leaves
// them out (migration 20261101000500_search.sql): گول ("tell me") folds to قول ("saying")
const STOP = new Set(
  `les des une est son ses sur par pour dans avec que qui quoi quel quelle quels quelles quand comment pourquoi
   combien est-ce cette ces cet aux elle elles ils nous vous leur leurs mais donc car plus moins tres tout tous
   fait faire faut peut etre avoir sont ont pas entre apres avant comme aussi alors ainsi
   في من الى على عن ما ماذا متى كيف لماذا هل هو هي هم ان او ثم التي الذي الذين هذا هذه ذلك تلك كان كانت يكون
   مع بين عند كل بعد قبل لا لم لن قد اي شنهو شنهي كيفاش كيفتاش اعلاش شحال منهو فين باش اللي ماهو
   نبغي نعرف گول ياسر گاع واعر فاهم ماني امنين منين فاين انتوم اهون امال اشو اريد اشرح وضح اذكر`
    .split(/\s+/)
    .map(matchKey)
    .filter((k): k is string => k !== null),
)
// a preposition with a pronoun attached (منها, عليه, عندك, فيهم, لنا, بها): a function word as well
const PREPOSITION_PRONOUN = /^(?:من|عن|في|علي|الي|عند|مع|لدي|ل|ب|ك)(?:ه|ها|هم|هما|هن|ك|كم|كما|كن|ي|نا)$/u
const ARABIC_LETTER = /\p{Script=Arabic}/u
/** The matching keys of a text's content words (matchKey, function words left out), in order. */
export const contentKeys = (text: string) => keysOf(text, false)

// what may be written onto an Arabic word that light10 leaves on it: a conjunction or preposition of one
// letter at its start (ومثال, بمثال, فنهار, لكل), and at its end the Hassaniya -و (فاهمو, يلزمو, يقراو)
// or a possessive or object pronoun (بحرنا, كتبهم, درسكم)
const ATTACHED_PREFIX = /^[وبفلك]/u
const ATTACHED_SUFFIX = /^(.{3,}?)(?:و|نا|هم|كم)$/u
// what a verb carries that light10 leaves on it: the prefixes of the imperfect (ي ت ن ا, and with the
// t of forms V, VI, VIII and X: يت ات نت ست يست) and the endings of person and object (ت وا و ني يه وه):
// يصوم meets الصوم, نجري meets إجراء, فرضت meets فرض
const VERB_PREFIXES = ['', 'ي', 'ت', 'ن', 'ا', 'يت', 'ات', 'اي', 'نت', 'ست', 'يست']
const VERB_SUFFIXES = ['', 'ت', 'وا', 'و', 'ني', 'يه', 'وه']
/** The shortest start of a Latin key that another form of its word shares (mairie and maire, évolue and évolution are cut at five). */
const LATIN_PREFIX = 4

/**
 * The keys of a text's content words (contentKeys), and for an Arabic word of five letters or more that
 * begins with a letter written onto it (ATTACHED_PREFIX: بخطوات, وللمشبه), the key of the word without it
 * too: a page's words are matched with a question's that way round as well (questionKeys reads the
 * question's words so), as light10 cannot tell that letter from the word's own.
 */
export const textKeys = (text: string) => keysOf(text, true)

/** contentKeys, and with `bare` textKeys's keys of the words without a letter written onto their start. */
function keysOf(text: string, bare: boolean): string[] {
  const keys: string[] = []
  const add = (word: string) => {
    const k = stem(word)
    if (k !== null && !STOP.has(k)) keys.push(k)
  }
  for (const w of foldedWords(text)) {
    if (PREPOSITION_PRONOUN.test(w)) continue
    add(w)
    if (bare && w.length >= 5 && ATTACHED_PREFIX.test(w) && ARABIC_LETTER.test(w)) add(w.slice(1))
  }
  return keys
}

/**
 * The question's keys (contentKeys), read against the words of the texts it is matched with: an Arabic
 * word whose key none of them holds is taken as the word left without one letter attached at its start
 * (ATTACHED_PREFIX), a pronoun or the Hassaniya -و at its end (ATTACHED_SUFFIX), or both, when that word's
 * key is one they hold. Light10 cannot take these off every word, as they are also a word's own letters
 * (بحر, فرض, لحم); the texts say which reading is meant. A key no text holds changes no text's rank.
 */
export function questionKeys(query: string, vocabulary: ReadonlySet<string>): Set<string> {
  const keys = new Set<string>()
  for (const [w, k] of questionWords(query)) {
    if (vocabulary.has(k)) keys.add(k)
    else if (ARABIC_LETTER.test(w)) keys.add(attachedReading(w, vocabulary) ?? verbReading(w, vocabulary) ?? k)
    else keys.add(latinReading(k, vocabulary) ?? k)
  }
  return keys
}

// a question is read against each of its sources' words in turn: its words and their keys are made once
const questionCache = new LRUCache<string, [word: string, key: string][]>({ max: 256 })
/** The question's content words, each with its key (function words and stop keys left out). */
function questionWords(query: string): [word: string, key: string][] {
  let words = questionCache.get(query)
  if (!words) {
    words = []
    for (const w of foldedWords(query)) {
      if (PREPOSITION_PRONOUN.test(w)) continue
      const k = stem(w)
      if (k !== null && !STOP.has(k)) words.push([w, k])
    }
    questionCache.set(query, words)
  }
  return words
}

/** The key of an Arabic word read without a verb's prefix or ending (VERB_PREFIXES, VERB_SUFFIXES), when the texts hold it. */
function verbReading(word: string, vocabulary: ReadonlySet<string>): string | undefined {
  for (const p of VERB_PREFIXES) {
    if (!word.startsWith(p)) continue
    for (const x of VERB_SUFFIXES) {
      if (!word.endsWith(x) || word.length - p.length - x.length < 3) continue
      const k = stem(word.slice(p.length, word.length - x.length))
      if (k !== null && k.length >= 3 && !STOP.has(k) && vocabulary.has(k)) return k
      // a verb whose last letter is weak ends in ي where its noun ends in ا (يزكي, الزكاة; يصلي, الصلاة)
      const weak = k !== null && k.length >= 3 && k.endsWith('ي') ? `${k.slice(0, -1)}ا` : null
      if (weak !== null && !STOP.has(weak) && vocabulary.has(weak)) return weak
    }
  }
  return undefined
}

/**
 * A Latin key that no text holds, read as the texts' Latin key that shares the longest start with it,
 * LATIN_PREFIX letters at the least (mairie and maire: "mairi" and "maire"; évoluer and évolution meet at
 * five already), the first in alphabetical order on a tie. Keys of fewer than five letters are whole
 * words (prix, pH) and are not read so.
 */
function latinReading(key: string, vocabulary: ReadonlySet<string>): string | undefined {
  if (key.length < FRENCH_STEM) return undefined
  let best: string | undefined
  let bestLength = LATIN_PREFIX
  for (const v of vocabulary) {
    if (ARABIC_LETTER.test(v)) continue
    let n = 0
    while (n < key.length && n < v.length && key[n] === v[n]) n++
    if (n > bestLength || (n === bestLength && (best === undefined || v < best))) [best, bestLength] = [v, n]
  }
  return best
}

function attachedReading(word: string, vocabulary: ReadonlySet<string>): string | undefined {
  const bare = ATTACHED_PREFIX.test(word) && word.length >= 4 ? word.slice(1) : undefined
  const readings = [bare, ATTACHED_SUFFIX.exec(word)?.[1], bare && ATTACHED_SUFFIX.exec(bare)?.[1]]
  for (const r of readings) {
    const k = r && stem(r)
    if (k && !STOP.has(k) && vocabulary.has(k)) return k
  }
  return undefined
}

/**
 * The share of the query's distinct word keys (matchKey) that each document holds. Measured on the
 * retrieval evaluation against BM25 over the candidates (k1 1.2, b 0.75, 0.3 and 0; idf-weighted shares):
 * the plain share ranks the right page first more often, as idf over twenty candidates rewards a rare
 * word that one wrong page happens to hold.
 */
export function keyCoverage(query: string, documents: readonly string[]): number[] {
  return coverageOf(new Set(contentKeys(query)), documents.map((d) => new Set(contentKeys(d))))
}

export function coverageOf(q: ReadonlySet<string>, documents: readonly ReadonlySet<string>[]): number[] {
  return documents.map((t) => share(q, t))
}

export function share(q: ReadonlySet<string>, t: ReadonlySet<string>): number {
  if (q.size === 0) return 0
  let hit = 0
  for (const k of q) if (t.has(k)) hit++
  return hit / q.size
}

/** Sentences that a passage counts: a window of this many, on from each sentence. */
export const PASSAGE_SENTENCES = 3
// a sentence ends at . ! ? ؟ ; ؛ or : followed by a space (decimal commas and "x = 3.5" stay whole)
export const SENTENCE_END = /(?<=[.!?;:؟؛])\s+/u

// the sentences of the chunks that come back turn after turn, and their keys: the rerank's passages and
// the sources' excerpts (chat/excerpt.ts) are both made of them
const sentenceCache = new LRUCache<string, { sentences: string[]; keys: Set<string>[]; all?: Set<string> }>({ max: 4096 })

/** A text's sentences (SENTENCE_END) and the keys of each (textKeys), cached by text. */
export function sentencesOf(text: string): { sentences: string[]; keys: Set<string>[] } {
  let forms = sentenceCache.get(text)
  if (!forms) {
    const sentences = text.split(SENTENCE_END)
    sentenceCache.set(text, forms = { sentences, keys: sentences.map((x) => new Set(textKeys(x))) })
  }
  return forms
}

/** The keys of all a text's sentences together (sentencesOf), cached with them: read, never changed. */
export function allKeysOf(text: string): ReadonlySet<string> {
  const forms: { keys: Set<string>[]; all?: Set<string> } = sentencesOf(text) // the cached entry itself
  return forms.all ??= new Set(forms.keys.flatMap((k) => [...k]))
}

/**
 * The keys of each passage of a text: PASSAGE_SENTENCES sentences in a row, on from each sentence
 * (a text of fewer sentences is one passage).
 */
export function passageKeys(text: string): Set<string>[] {
  const sentences = sentencesOf(text).keys
  const passages: Set<string>[] = []
  for (let i = 0; i === 0 || i + PASSAGE_SENTENCES <= sentences.length; i++) {
    const passage = new Set<string>()
    for (const s of sentences.slice(i, i + PASSAGE_SENTENCES)) for (const k of s) passage.add(k)
    passages.push(passage)
  }
  return passages
}

/**
 * The best share of the query's keys that one passage of each document holds (passageKeys). A page
 * that answers a question holds its words together; a long page also holds them scattered, one here
 * and one there in paragraphs about other things, and the whole text's share cannot tell the two apart.
 */
export function passageCoverage(query: string, documents: readonly string[]): number[] {
  const q = new Set(contentKeys(query))
  return documents.map((d) => bestPassage(q, passageKeys(d)))
}

export function bestPassage(q: ReadonlySet<string>, passages: readonly ReadonlySet<string>[]): number {
  let best = 0
  for (const p of passages) best = Math.max(best, share(q, p))
  return best
}

/** Whether a text is written mostly in Arabic letters rather than Latin ones. */
