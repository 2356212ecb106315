// A source's excerpt (chat/excerpt.ts): the sentences of its chunk that hold the question's words.
import { describe, expect, it } from 'vitest'
import { excerpt, EXCERPT_CHARS } from '../functions-shared/chat/excerpt.ts'

const intro =
  'Leçon 4 : le fleuve Sénégal et sa vallée. Le fleuve naît en Guinée, dans le massif du Fouta-Djalon. Il marque la frontière entre la Mauritanie et le Sénégal.'
const climate =
  "La vallée connaît un climat sahélien chaud. Le régime du fleuve dépend des pluies tombées en Guinée : la crue arrive d'août à octobre, puis la décrue libère des terres humides."
const farming =
  "Après la décrue, les paysans pratiquent les cultures de décrue, surtout le sorgho, sur les terres appelées walo. Le barrage de Diama empêche la remontée de l'eau salée."
const chunk = `${intro} ${climate} ${farming}`

describe('excerpt', () => {
  it("quotes the run of sentences that holds most of the question's words, opening on the one that holds most", () => {
    const quoted = excerpt(chunk, ['À quelle saison arrive la crue du fleuve ?'])
    expect(quoted).toMatch(/^… Le régime du fleuve dépend des pluies tombées en Guinée : la crue arrive d'août à octobre/)
    expect(quoted.length).toBeLessThanOrEqual(EXCERPT_CHARS)
    expect(excerpt(chunk, ["Quel barrage arrête l'eau salée ?"])).toContain("Le barrage de Diama empêche la remontée de l'eau salée.")
  })

  it('reads the words of any form of the question: the message, its translation', () => {
    expect(excerpt(chunk, ['متى يأتي الفيضان؟', 'Quand arrive la crue ?'])).toContain("la crue arrive d'août à octobre")
  })

  it('reads a letter written onto an Arabic word of the question as the chunk reads it (فبحرنا: البحر)', () => {
    const page = 'تعد الثروة السمكية من أهم موارد البلاد، وتسهم في الدخل الوطني بنسبة كبيرة ويعمل فيها آلاف المواطنين في المدن الساحلية. '.repeat(2) +
      'ويرجع غنى البحر الموريتاني بالأسماك إلى ظاهرة صعود المياه الباردة العميقة المحملة بالعوالق قرب الساحل.'
    expect(excerpt(page, ['اعلاش الحوت كثير فبحرنا؟'])).toContain('ويرجع غنى البحر الموريتاني بالأسماك')
  })

  it('keeps a short chunk whole, starts at the beginning when nothing matches, and cuts a long sentence at a word', () => {
    expect(excerpt(intro, ['crue'])).toBe(intro)
    const none = excerpt(chunk, ['photosynthèse chlorophylle'])
    expect(none.startsWith('Leçon 4 : le fleuve Sénégal')).toBe(true)
    expect(none.endsWith(' …')).toBe(true)
    const long = `${'mot '.repeat(150)}crue.`
    const cut = excerpt(long, ['mot'])
    expect(cut.length).toBeLessThanOrEqual(EXCERPT_CHARS)
    expect(cut).toMatch(/^(mot )+…$/)
  })

  it('keeps the text as written: Arabic letters, hamzas and marks untouched', () => {
    const ar = 'الدرس التاسع: التشبيه. التشبيه من أهم ألوان علم البيان، وهو عقد مماثلة بين أمرين أو أكثر. '.repeat(3) +
      'أركانُ التشبيه أربعة: المشبَّه، والمشبَّه به، وأداة التشبيه، ووجه الشبه.'
    const quoted = excerpt(ar, ['ما هي أركان التشبيه؟'])
    expect(quoted).toContain('أركانُ التشبيه أربعة: المشبَّه، والمشبَّه به، وأداة التشبيه، ووجه الشبه.')
  })
})
