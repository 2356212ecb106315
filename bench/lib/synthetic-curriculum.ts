// bench:chat's synthetic curriculum: six subjects' vocabularies whose words follow Zipf's law, drawn
// with seeded randomness (the same chunks and questions every run), and the documents, chunks and
// vectors made of them.
import { offlineVector } from '../../functions-shared/ai/offline-embedder.ts'
import { namespaceFor } from '../../functions-shared/catalogue/namespace.ts'
import type { Sql } from '../../functions-shared/db/client.ts'

const VOCAB: Record<string, string[]> = {
  mathematiques:
    'équation inconnue fonction dérivée limite suite intégrale primitive probabilité vecteur matrice triangle cercle polynôme racine logarithme exponentielle théorème démonstration calcul fraction nombre réel complexe géométrie'
      .split(' '),
  physique:
    'onde célérité force énergie vitesse accélération tension courant circuit résistance lumière mécanique électricité fréquence atome molécule réaction oscillation condensateur bobine gravitation lentille optique masse'
      .split(' '),
  'sciences-naturelles':
    'cellule ADN gène chromosome photosynthèse plante digestion respiration immunité écosystème neurone protéine enzyme hormone mitose méiose reproduction sang volcan séisme roche fossile évolution espèce'
      .split(' '),
  'education-islamique':
    'prière zakat jeûne ramadan coran hadith prophète pilier ablutions pèlerinage foi unicité mosquée aumône invocation comportement famille voisin honnêteté science patience justice savoir adoration'
      .split(' '),
  arabe:
    'grammaire sujet verbe complément phrase nominale verbale poésie rhétorique métaphore comparaison conjugaison déclinaison accord prose texte auteur style rime mètre lexique morphologie syntaxe discours'
      .split(' '),
  histoire:
    'empire almoravides colonisation indépendance guerre traité siècle royaume dynastie commerce caravane révolution nation frontière constitution état peuple économie société civilisation découverte conquête résistance'
      .split(' '),
}
const COMMON = 'le la les des une un dans pour avec sur est sont qui que par plus comme leçon exemple exercice chapitre définition propriété méthode'.split(' ')
export const SUBJECTS = Object.keys(VOCAB)
export const GRADES = ['1AS', '2AS', '3AS', '4AS', '5C', '6C', '7C']

function prng(seed: number) {
  let s = seed >>> 0
  return () => {
    s = (s + 0x6d2b79f5) >>> 0
    let t = s
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}
const rand = prng(42)
const pick = <T>(xs: readonly T[]) => xs[Math.floor(rand() * xs.length)]!
// Each subject's words follow Zipf's law, as words of real text do: its 25 named words first, then
// 2,975 made-up ones (syllables, so the French stemmer sees words), the word of rank r drawn with
// probability ∝ 1/r. A few words are in most of a subject's chunks, most are in few.
const SYLLABLES = 'ba be bi bo da de di do ka ke ki ko la le li lo ma me mi mo na ne ni no ra re ri ro sa se si so ta te ti to'.split(' ')
const ZIPF_WORDS = 3000
const LEXICON = Object.fromEntries(
  SUBJECTS.map((subject, s) => [
    subject,
    [
      ...VOCAB[subject]!,
      ...Array.from({ length: ZIPF_WORDS - VOCAB[subject]!.length }, (_, i) => {
        let n = i * SUBJECTS.length + s
        let w = ''
        for (let k = 0; k < 4; k++, n = Math.floor(n / SYLLABLES.length)) w += SYLLABLES[n % SYLLABLES.length]
        return `${w}ment`
      }),
    ],
  ]),
)
const ZIPF_CDF = (() => {
  const w = Array.from({ length: ZIPF_WORDS }, (_, r) => 1 / (r + 1))
  const total = w.reduce((a, b) => a + b, 0)
  let acc = 0
  return w.map((x) => (acc += x / total))
})()
const zipf = (subject: string) => {
  const u = rand()
  let lo = 0
  let hi = ZIPF_WORDS - 1
  while (lo < hi) {
    const mid = (lo + hi) >> 1
    if (ZIPF_CDF[mid]! < u) lo = mid + 1
    else hi = mid
  }
  return LEXICON[subject]![lo]!
}
export const sentence = (subject: string, words: number) => Array.from({ length: words }, () => (rand() < 0.6 ? zipf(subject) : pick(COMMON))).join(' ')

export async function documentsFor(sql: Sql): Promise<Map<string, string>> {
  const ids = new Map<string, string>()
  for (const subject of SUBJECTS) {
    for (const grade of GRADES) {
      const [d] = await sql`insert into public.documents (title, grade, subject, language, status, ingestion_ts, vectordb_namespace)
        values (${`${subject} ${grade}`}, ${grade}, ${subject}, 'fr', 'ready', now(), ${namespaceFor(grade, subject)}) returning id`
      ids.set(`${subject}/${grade}`, d!.id as string)
    }
  }
  return ids
}

/** `n` chunks (text + vector + light metadata), in batches. */
export async function loadChunks(sql: Sql, docs: Map<string, string>, from: number, n: number, withText: boolean): Promise<void> {
  const batch = 500
  for (let start = from; start < from + n; start += batch) {
    const rows = Array.from({ length: Math.min(batch, from + n - start) }, (_, j) => {
      const i = start + j
      const subject = SUBJECTS[i % SUBJECTS.length]!
      const grade = GRADES[Math.floor(i / SUBJECTS.length) % GRADES.length]!
      const text = `${sentence(subject, 40)}.`
      return {
        id: `c${i}`,
        index: i,
        file: docs.get(`${subject}/${grade}`)!,
        subject,
        grade,
        text,
        page: 1 + (i % 200),
        vector: `[${offlineVector(text, 1536).map((x) => x.toFixed(6)).join(',')}]`,
      }
    })
    if (withText) {
      await sql`insert into public.document_chunks (id, file_id, page_number, chunk_index, content)
        select * from unnest(${rows.map((r) => r.id)}::text[], ${rows.map((r) => r.file)}::uuid[], ${rows.map((r) => r.page)}::int[], ${
        rows.map((r) => r.index)
      }::int[], ${rows.map((r) => r.text)}::text[])`
    }
    await sql`insert into public.vectors (index_name, namespace, id, file_id, embedding, metadata)
      select 'curriculum-1536', ns, id, file, emb::extensions.vector,
             jsonb_build_object('chunk_id', id, 'file_id', file, 'language', 'fr', 'grade', grade, 'subject', subject, 'source_url', 'https://portal.example.mr/' || subject || '.pdf', 'page_number', page, 'ingestion_ts', now())
        from unnest(${rows.map((r) => namespaceFor(r.grade, r.subject))}::text[], ${rows.map((r) => r.id)}::text[], ${rows.map((r) => r.file)}::uuid[],
                    ${rows.map((r) => r.vector)}::text[], ${rows.map((r) => r.grade)}::text[], ${rows.map((r) => r.subject)}::text[], ${
      rows.map((r) => r.page)
    }::int[])
             as t(ns, id, file, emb, grade, subject, page)`
  }
}
