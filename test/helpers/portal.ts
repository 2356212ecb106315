// A small curriculum portal on loopback: paginated listing pages linking French and Arabic PDFs
// generated at start, a near-duplicate, an exact re-upload, a too-short PDF, a page that is not a PDF,
// a 404 and a redirect to a private address.
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { makePdf } from '../../scripts/lib/pdf.ts'

export const FR_LESSON = [
  'Leçon 3 : les équations du premier degré à une inconnue.',
  "Une équation est une égalité dans laquelle figure un nombre inconnu, noté le plus souvent x. Résoudre l'équation, c'est trouver toutes les valeurs de x pour lesquelles l'égalité est vraie.",
  "Pour résoudre une équation du premier degré, on isole l'inconnue : on ajoute ou on retranche le même nombre aux deux membres, puis on divise les deux membres par le même nombre non nul.",
  "Exemple : pour résoudre 3x + 2 = 11, on retranche 2 aux deux membres et on obtient 3x = 9, puis on divise par 3 et on obtient x = 3. On vérifie la solution en remplaçant x par 3 dans l'équation de départ.",
  "Exercice : résoudre les équations 5x - 4 = 21 et 2(x + 1) = 14, puis vérifier chaque solution. Un problème concret se ramène souvent à une équation : on choisit l'inconnue, on traduit l'énoncé, on résout et on conclut.",
].join(' ')
// the same lesson with two words changed
export const FR_LESSON_NEAR = FR_LESSON.replace('souvent x', 'souvent y').replace('concret', 'pratique')

export const AR_LESSON = [
  'الدرس الأول: أركان الإسلام.',
  'الإسلام مبني على خمسة أركان: الشهادتان، وإقامة الصلاة، وإيتاء الزكاة، وصوم رمضان، وحج البيت لمن استطاع إليه سبيلا.',
  'الصلاة عماد الدين، وهي خمس صلوات في اليوم والليلة، يؤديها المسلم في أوقاتها بخشوع وطمأنينة.',
  'الزكاة حق واجب في المال إذا بلغ النصاب وحال عليه الحول، تعطى للفقراء والمساكين وبقية الأصناف الثمانية.',
  'الصوم إمساك عن المفطرات من طلوع الفجر إلى غروب الشمس في شهر رمضان، والحج قصد مكة لأداء المناسك في وقت مخصوص.',
].join(' ')

export const PHYSICS_LESSON = [
  "Leçon 7 : les ondes mécaniques progressives. Une onde mécanique est la propagation d'une perturbation dans un milieu matériel, sans transport de matière mais avec transport d'énergie.",
  'On distingue les ondes transversales, pour lesquelles la perturbation est perpendiculaire à la direction de propagation, et les ondes longitudinales, pour lesquelles elle lui est parallèle.',
  "La célérité d'une onde dépend du milieu de propagation : le son se propage à environ 340 mètres par seconde dans l'air et à environ 1500 mètres par seconde dans l'eau.",
].join(' ')

export interface Portal {
  url: string
  hits: Map<string, number>
  close(): Promise<void>
}

export async function startPortal(): Promise<Portal> {
  const files = new Map<string, Uint8Array>([
    ['/fichiers/4AS/mathematiques/equations.pdf', await makePdf([FR_LESSON])],
    ['/fichiers/4AS/mathematiques/equations-v2.pdf', await makePdf([FR_LESSON_NEAR])],
    ['/fichiers/4AS/education-islamique/arkan.pdf', await makePdf([AR_LESSON], { arabic: true })],
    ['/copies/arkan-copie.pdf', await makePdf([AR_LESSON], { arabic: true })],
    ['/fichiers/5AS/physique/ondes.pdf', await makePdf([PHYSICS_LESSON])],
    ['/fichiers/court.pdf', await makePdf(['Sommaire du manuel de mathématiques.'])],
  ])
  const hits = new Map<string, number>()
  const page = (body: string) => `<!doctype html><html lang="fr"><head><meta charset="utf-8"><title>Programmes</title></head><body>${body}</body></html>`
  const server: Server = createServer((req, res) => {
    const path = new URL(req.url!, 'http://portal').pathname
    hits.set(path, (hits.get(path) ?? 0) + 1)
    if (path === '/programmes/page1.html') {
      return res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(page(`
        <h1>Programmes du secondaire</h1>
        <ul>
          <li><a href="/fichiers/4AS/mathematiques/equations.pdf">Mathématiques 4AS — manuel</a></li>
          <li><a href="../fichiers/4AS/education-islamique/arkan.pdf">التربية الإسلامية — كتاب</a></li>
          <li><a href="/fichiers/4AS/mathematiques/equations-v2.pdf#page=1">Mathématiques 4AS — nouvelle édition</a></li>
          <li><a href="/copies/arkan-copie.pdf">نسخة</a></li>
          <li><a href="/fichiers/court.pdf">Sommaire</a></li>
          <li><a href="/fichiers/page-html.pdf">Document</a></li>
          <li><a href="/fichiers/absent.pdf">Document retiré</a></li>
          <li><a href="/fichiers/deplace.pdf">Document déplacé</a></li>
          <li><a href="/contact.html">Contact</a></li>
        </ul>
        <a rel="next" href="/programmes/page2.html">Suivant</a>`))
    }
    if (path === '/programmes/page2.html') {
      return res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(page(`
        <table><tr><td>Série D</td><td><a href="/fichiers/5AS/physique/ondes.pdf">Physique 5AS — manuel</a></td></tr></table>
        <a href="/fichiers/4AS/mathematiques/equations.pdf">Mathématiques 4AS (déjà listé)</a>
        <a rel="next" href="/programmes/page1.html">Retour</a>`))
    }
    if (path === '/fichiers/page-html.pdf') return res.writeHead(200, { 'content-type': 'text/html' }).end(page('<p>Page introuvable</p>'))
    if (path === '/fichiers/deplace.pdf') return res.writeHead(302, { location: 'http://10.0.0.1/secret.pdf' }).end()
    const file = files.get(path)
    if (file) return res.writeHead(200, { 'content-type': 'application/pdf', 'content-length': file.byteLength }).end(Buffer.from(file))
    res.writeHead(404, { 'content-type': 'text/plain' }).end('not found')
  })
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  return {
    url,
    hits,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
      }),
  }
}
