// Small talk: a message made only of greetings, thanks, farewells and the words that glue them ("Bonjour,
// ça va ?", "السلام عليكم ورحمة الله", "شكرا جزيلا", "شحالك؟ لاباس عليك؟"). Such a message asks nothing of
// the curriculum, yet its words ("الله", "aide", "bien") are in the lessons and would match them; it is
// recognized before any search, and the student is asked what they need (a clarification, 2 tokens).
// Greetings are a closed class, so a list is the right tool here; one content word ("Bonjour, c'est quoi
// un référentiel ?") makes the message a question.
import { normalizeWords } from '../text/subjects.ts'

const FRENCH = `
  bonjour bonsoir salut coucou hello hi hey bonne bon journee soiree nuit matinee weekend merci mercii beaucoup
  remercie remercier infiniment mille fois ca va vas allez aller bien tres tres comment et toi vous tu moi je
  suis au revoir plus tard bientot demain a ok okay oki accord d daccord super genial cool top parfait
  excellent bravo formidable pour ton ta votre tes vos aide ton le la les l de du des un une c est ce que
  qu il s plait svp stp oui non si monsieur madame prof professeur maitre cher chere peux pouvez peut
  aider m me besoin j ai
`
const ARABIC = `
  السلام سلام عليكم عليك وعليكم ورحمه رحمه الله وبركاته بركاته مرحبا مرحبتين اهلا وسهلا سهلا صباح مساء الخير
  النور شكرا شكر جزيلا الشكر لك لكم علي على المساعده مساعده مع السلامه كيف حالك حالكم الحال انت انتم بخير
  الحمد لله والحمد نعم لا طيب حسنا ممتاز بارك فيك فيكم جزاك جزاكم خيرا يا استاذ استاذي استاذه معلم شيخ
  وداعا الي اللقاء لقاء تصبح تصبحون هل يمكنك يمكن ممكن مساعدتي تساعدني ساعدني احتاج
  الى
`
const HASSANIYA = `
  شحالك شحالكم اشحالك لاباس الباس باس ماشي ابركه گاع اعليك اعليكم انتوم عنك عنكم يعطيك الصحه
  مزيان زين
`

const WORDS = new Set(`${FRENCH} ${ARABIC} ${HASSANIYA}`.split(/\s+/).filter(Boolean).map(normalizeWords))

/** True when every word of the message is a greeting, a thanks, a farewell or glue between them. */
export function isSmallTalk(text: string): boolean {
  const words = normalizeWords(text).split(' ').filter(Boolean)
  return words.length > 0 && words.length <= 12 && words.every((w) => WORDS.has(w))
}
