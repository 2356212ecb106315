// Words a typesetter broke at a line's end, put back whole (functions-shared/text/hyphenation.ts).
import { describe, expect, it } from 'vitest'
import { joinHyphenatedWords } from '../functions-shared/text/hyphenation.ts'

const join = (...texts: string[]) => joinHyphenatedWords(texts.map((text, i) => ({ number: i + 1, text }))).map((p) => p.text)

describe('joinHyphenatedWords', () => {
  it('puts back a word broken at a line end, whether or not the document writes it whole elsewhere, on any page', () => {
    expect(join('Les équa-\ntions horaires du mobile', 'Les équations du mouvement')).toEqual([
      'Les équationshoraires du mobile'.replace('équationshoraires', 'équations horaires'),
      'Les équations du mouvement',
    ])
    expect(join('La photo-\nsynthèse produit du dioxygène.')).toEqual(['La photosynthèse produit du dioxygène.'])
    // a hyphen, a soft hyphen or U+2010, with spaces about the line's end
    expect(join('une gran-  \n  deur', 'une gran\u00AD\ndeur', 'une gran\u2010\ndeur')).toEqual(['une grandeur', 'une grandeur', 'une grandeur'])
  })

  it('keeps the hyphen of a compound: written so elsewhere, a part of a longer one, a pronoun after a verb, a leading word, a name', () => {
    expect(join('la demi-\ndroite [AB)', 'Toute demi-droite a une origine.')).toEqual(['la demi-droite [AB)', 'Toute demi-droite a une origine.'])
    expect(join("la vitesse, c'est-à-\ndire la dérivée", 'Vis-\nà-vis de la Terre')).toEqual(["la vitesse, c'est-à-dire la dérivée", 'Vis-à-vis de la Terre'])
    expect(join("Comment détermine-t-\non l'accélération ? Faudra-\nt-il mesurer ? Celui-\nci, dit-\nelle.")).toEqual([
      "Comment détermine-t-on l'accélération ? Faudra-t-il mesurer ? Celui-ci, dit-elle.",
    ])
    expect(join('Peut-\nêtre un sous-\nensemble au-\ndessus.')).toEqual(['Peut-être un sous-ensemble au-dessus.'])
    expect(join('la wilaya de Nouakchott-\nNord')).toEqual(['la wilaya de Nouakchott-Nord'])
    // the document's own writing wins over the leading word: "soustraction" is one word in it
    expect(join('la sous-\ntraction des entiers', 'La soustraction est l’opération inverse.')).toEqual([
      'la soustraction des entiers',
      'La soustraction est l’opération inverse.',
    ])
  })

  it('leaves alone a hyphen that is not at a line end, a dash, numbers, and Arabic', () => {
    const pages = ['Les années 1960-\n1970 : la période -\nsuite', 'الدرس الأول -\nالحركة', 'un anti-inflammatoire\nsur deux lignes']
    expect(join(...pages)).toEqual(pages)
    // a document without a break is given back as it is
    const clean = [{ number: 1, text: 'Les équations horaires.' }]
    expect(joinHyphenatedWords(clean)[0]).toBe(clean[0])
  })
})
