// Words a typesetter broke at a line's end: "les équa-" / "tions horaires". The hyphen is the layout's,
// not the writer's, yet once the page's lines are joined the word is two ("équa- tions") that no
// question holds: the search, the keys and the embeddings miss it, and a student reads a stray hyphen.
// The word is put back whole, on the first line. Only French breaks words so (Arabic stretches its lines
// instead); a compound, whose hyphen is the writer's ("c'est-à-" / "dire", "faudra-t-" / "il",
// "Nouakchott-" / "Nord"), keeps it.

/**
 * A Latin letter-run (after a hyphen if it ends a compound's part: "est-à-"), a hyphen or soft hyphen
 * ending its line, and a Latin letter-run starting the next (before a hyphen if a compound goes on: "vis-à-" / "vis").
 */
const BREAK = /(-?)(\p{sc=Latin}[\p{sc=Latin}\p{M}]*)[-\u00AD\u2010][ \t]*\n[ \t]*(\p{sc=Latin}[\p{sc=Latin}\p{M}]*)(-?)/gu
const HAS_BREAK = new RegExp(BREAK.source, 'u')
/** Words as the document's vocabulary counts them: letters, and compounds of letter-runs joined by hyphens. */
const WORD = /\p{L}[\p{L}\p{M}]*(?:-\p{L}[\p{L}\p{M}]*)*/gu
/** The words that follow a hyphen of their own: after a verb (détermine-t-on, dit-elle, prenez-les), or a pronoun (celui-ci, eux-mêmes). */
const CLITICS = new Set([
  'je',
  'tu',
  'il',
  'elle',
  'on',
  'nous',
  'vous',
  'ils',
  'elles',
  'le',
  'la',
  'les',
  'lui',
  'leur',
  'leurs',
  'moi',
  'toi',
  'y',
  'en',
  'ce',
  'ci',
  'là',
  'même',
  'mêmes',
])
/** The words that lead compounds (peut-être, demi-droite, sous-ensemble, au-dessus, nord-est, bien-être). */
const LEADS = new Set([
  'au',
  'aux',
  'peut',
  'demi',
  'semi',
  'mi',
  'sous',
  'non',
  'quasi',
  'contre',
  'avant',
  'après',
  'arrière',
  'vice',
  'ex',
  'grand',
  'grande',
  'porte',
  'nord',
  'sud',
  'est',
  'ouest',
  'bien',
  'mal',
  'néo',
  'post',
  'auto',
  'arc',
  'chef',
  'belle',
  'beau',
  'vis',
  'tout',
  'hors',
  'haut',
  'franco',
  'afro',
  'arabo',
  'gréco',
  'socio',
  'physico',
  'électro',
])
/** A typesetter leaves two letters at least on either side of a break (TeX's French: 2 and 3). */
const MIN_PART = 2

const lower = (word: string) => word.normalize('NFC').toLocaleLowerCase('fr')

/**
 * The pages with each word broken at a line's end put back whole. Whether a hyphen is the layout's or a
 * compound's is read off the document itself: the word written whole elsewhere in it is joined, the
 * compound written elsewhere keeps its hyphen (the more frequent when both are); a word the document
 * has neither way is joined, unless the second part is a pronoun or the "t" of an inversion, which
 * follow a hyphen of their own, or begins with a capital. Run on the pages with their lines, before canonicalize joins them.
 */
export function joinHyphenatedWords<T extends { text: string }>(pages: readonly T[]): T[] {
  if (!pages.some((p) => HAS_BREAK.test(p.text))) return [...pages]
  const counts = new Map<string, number>()
  for (const page of pages) {
    // the document's words, the broken ones left out (their halves are not words of it)
    for (const word of page.text.replace(BREAK, ' ').match(WORD) ?? []) {
      const key = lower(word)
      counts.set(key, (counts.get(key) ?? 0) + 1)
    }
  }
  const rejoin = (_match: string, before: string, head: string, tail: string, after: string) => {
    const whole = counts.get(lower(head + tail)) ?? 0
    const compound = counts.get(lower(`${head}-${tail}`)) ?? 0
    const keep = compound > whole ||
      (compound === 0 &&
        whole === 0 &&
        // a part of a longer compound; a pronoun or the "t" of an inversion; a lead of compounds; a part
        // too short for a syllable break; a capital, which starts a name's second part (Jean-Pierre,
        // Nouakchott-Nord), never a syllable
        (before !== '' || after !== '' || CLITICS.has(lower(tail)) || lower(head) === 't' || LEADS.has(lower(head)) || [...head].length < MIN_PART ||
          [...tail].length < MIN_PART || tail[0] !== lower(tail[0]!)))
    return `${before}${head}${keep ? '-' : ''}${tail}${after}`
  }
  return pages.map((page) => {
    const text = page.text.replace(BREAK, rejoin)
    return text === page.text ? page : { ...page, text }
  })
}
