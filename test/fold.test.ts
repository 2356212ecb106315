// The folding used for matching (text/fold.ts): what the offline embedder, the offline rerank and the
// subject names compare, never what students read.
import { describe, expect, it } from 'vitest'
import { foldedWords, foldText } from '../functions-shared/text/fold.ts'
import { offlineVector } from '../functions-shared/ai/offline-embedder.ts'
import { keyCoverage, matchKey } from '../functions-shared/text/keys.ts'

describe('folding for matching', () => {
  it('keeps a vowelled Arabic word whole: its marks go, it is not cut at them', () => {
    expect(foldedWords('كَتَبَ التِّلْمِيذُ الدَّرْسَ')).toEqual(['كتب', 'التلميذ', 'الدرس'])
    expect(offlineVector('كَتَبَ التِّلْمِيذُ الدَّرْسَ', 64)).toEqual(offlineVector('كتب التلميذ الدرس', 64))
    expect(keyCoverage('ما حُكْمُ الزَّكَاةِ؟', ['حكم الزكاة واجب', 'الصلاة'])).toEqual([1, 0])
  })

  it('folds the letters the search index folds: hamza seats, taa marbuta, alef maqsura, the Hassaniya gaf, Arabic-Indic digits', () => {
    expect(foldText('أإآٱ')).toBe('اااا')
    expect(foldText('مدرسة على')).toBe('مدرسه علي')
    expect(foldText('گال')).toBe('قال')
    expect(foldText('سنة ١٩٦٠')).toBe('سنه 1960')
    expect(foldText('Équation DÉRIVÉE')).toBe('equation derivee')
  })

  it('reads the Persian forms of yeh, kaf and heh that some typesetting puts in Arabic text as the Arabic letters', () => {
    // U+06CC farsi yeh, U+06A9 keheh: a text layer written with them still meets a question typed in Arabic
    expect(foldText('\u0641\u06CC \u0645\u06A9\u0629')).toBe(foldText('في مكة'))
    expect(matchKey('\u0627\u0644\u06A9\u062A\u0627\u0628')).toBe(matchKey('الكتاب'))
  })
})
