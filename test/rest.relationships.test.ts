// /rest/v1's relationships as PostgREST reads them (one-to-one, self-references, embeds named by a key,
// computed fields and relationships, unnamed function parameters), names that need quotes, and the
// bounds on what one query string may ask; the fixture is test/helpers/postgrest-fixture.ts.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type PostgrestFixture, startPostgrestFixture } from './helpers/postgrest-fixture.ts'

let f: PostgrestFixture

beforeAll(async () => {
  f = await startPostgrestFixture()
})
afterAll(async () => f?.close())

describe('relationships as PostgREST reads them', () => {
  it("reads one-to-one as an object, a table's children through its own key, and an embed named by a key's column or name", async () => {
    const one = await f.reader().from('pt_authors').select('name, pt_author_details(bio)').order('id').limit(2)
    expect(one.data).toEqual([{ name: 'Mariem', pt_author_details: { bio: 'Poétesse de Nouakchott' } }, { name: 'Ahmedou', pt_author_details: null }])
    const children = await f.reader().from('pt_topics').select('name, pt_topics(name)').eq('id', 1).single()
    expect(children.data).toEqual({ name: 'Sciences', pt_topics: [{ name: 'Physique' }, { name: 'Chimie' }] })
    const parent = await f.reader().from('pt_topics').select('name, parent_id(name)').eq('id', 2).single()
    expect(parent.data).toEqual({ name: 'Physique', parent_id: { name: 'Sciences' } })
    const byKey = await f.reader().from('pt_authors').select('name, edited:pt_books_editor_id_fkey(title)').eq('id', 1).single()
    expect(byKey.data).toEqual({ name: 'Mariem', edited: [{ title: 'Le fleuve' }] })
  })

  it('reads computed fields and computed relationships (functions of the row), and an empty embed only filters', async () => {
    const rows = await f.reader().from('pt_authors').select('name, pt_initial, pt_long_books(title)').order('id')
    expect(rows.data).toEqual([
      { name: 'Mariem', pt_initial: 'M', pt_long_books: [{ title: 'Les dunes' }] },
      { name: 'Ahmedou', pt_initial: 'A', pt_long_books: [{ title: 'Le fleuve' }] },
      { name: 'Khadija', pt_initial: 'K', pt_long_books: [] },
    ])
    const filtered = await f.reader().from('pt_books').select('title, pt_authors!author_id!inner()').eq('pt_authors.name', 'Ahmedou')
    expect(filtered.data).toEqual([{ title: 'Le fleuve' }])
    const aggregate = await f.reader().from('pt_authors').select('name, pt_books!author_id(count)')
    expect(aggregate).toMatchObject({ status: 400, error: { code: 'PGRST123', message: 'Use of aggregate functions is not allowed' } })
  })

  it('calls a function of an unnamed parameter with {"": value}, and tells overloads apart by the arguments given', async () => {
    expect((await f.reader().rpc('pt_twice', { '': 21 })).data).toBe(42)
    expect((await f.reader().rpc('pt_pick')).data).toBe(0)
    expect((await f.reader().rpc('pt_pick', { n: 3 })).data).toBe(3)
  })
})

describe('names that need quotes', () => {
  it('reads and writes columns whose names hold a space or other signs, written in double quotes', async () => {
    const inserted = await f.service().from('pt_odd').insert([{ 'first name': 'Aly', 'n° de page': 1 }, { 'first name': 'Binta', 'n° de page': 2 }]).select(
      '"first name","n° de page"',
    )
    expect(inserted).toMatchObject({ status: 201, data: [{ 'first name': 'Aly', 'n° de page': 1 }, { 'first name': 'Binta', 'n° de page': 2 }] })
    expect((await f.service().from('pt_odd').select('"first name"').eq('"first name"', 'Binta')).data).toEqual([{ 'first name': 'Binta' }])
  })
})

describe('bounds on what one query string may ask', () => {
  it('nests embeds at most 10 levels and 40 in all, logic trees at most 10 levels and 200 conditions (400 each), and answers on', async () => {
    const nest = (levels: number) => Array.from({ length: levels }, () => 'pt_topics(name').join(',') + ')'.repeat(levels)
    expect((await f.reader().from('pt_topics').select(`name,${nest(10)}`).eq('id', 1)).status).toBe(200)
    const deep = await f.reader().from('pt_topics').select(`name,${nest(11)}`)
    expect(deep).toMatchObject({ status: 400, error: { code: 'PGRST100', details: 'embedded resources nest at most 10 levels deep' } })
    // a self-reference nested two hundred levels (the gateway's request line holds a few hundred more)
    expect((await f.reader().from('pt_topics').select(`name,${nest(200)}`)).status).toBe(400)
    const wide = await f.reader().from('pt_topics').select(['name', ...Array.from({ length: 41 }, (_, i) => `t${i}:pt_topics(name)`)].join(','))
    expect(wide.error).toMatchObject({ code: 'PGRST100', details: 'a select names at most 40 embedded resources' })
    const tree = (levels: number): string => (levels === 0 ? 'id.eq.1' : `and(id.gt.0,${tree(levels - 1)})`)
    expect((await f.reader().from('pt_topics').select('name').or(tree(9))).status).toBe(200)
    expect((await f.reader().from('pt_topics').select('name').or(tree(10))).error).toMatchObject({
      code: 'PGRST100',
      details: 'a logic tree nests at most 10 levels deep',
    })
    const many = await f.reader().from('pt_topics').select('name').or(Array.from({ length: 201 }, (_, i) => `id.eq.${i}`).join(','))
    expect(many.error).toMatchObject({ code: 'PGRST100', details: 'a logic tree holds at most 200 conditions' })
    expect((await f.reader().from('pt_topics').select('name').eq('id', 1)).data).toEqual([{ name: 'Sciences' }])
  })
})
