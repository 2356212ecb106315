// What a listing page's markup says around a link: the text of its list item, row or paragraph, the
// header of its table column, the headings it sits under; read from the parsed DOM with bounded work.
import type * as cheerio from 'cheerio'

export const squash = (s: string, max = 500) => s.replace(/\s+/g, ' ').trim().slice(0, max)
export type Selection = ReturnType<cheerio.CheerioAPI>

/** The little of a parsed node that is read here (domhandler's nodes, as cheerio gives them). */
export interface DomNode {
  type: string
  name?: string
  data?: string
  parent: DomNode | null
  children?: DomNode[]
  attribs?: Record<string, string>
}

/**
 * How far up from a link its context (list item, row...) and its table cell are looked for. A portal puts
 * them a few levels up; a search to the root would cost each link the whole depth of a page that nests
 * a link in every level (docs/pipeline.md).
 */
export const MAX_ANCESTORS = 32
/** Nodes read, at most, for the text around a link: what is past them is no part of a 500-character context. */
const MAX_CONTEXT_NODES = 2_000

/** The node itself or its nearest ancestor, MAX_ANCESTORS levels up at most, whose tag is one of `names`. */
export function nearest(node: DomNode | null, names: ReadonlySet<string>, self = false): DomNode | null {
  let n = self ? node : (node?.parent ?? null)
  for (let i = 0; n && i <= MAX_ANCESTORS; i++, n = n.parent) if (n.name !== undefined && names.has(n.name)) return n
  return null
}

export const CONTEXTS = new Set(['li', 'tr', 'p', 'dd', 'article', 'section'])
export const ITEMS = new Set(['li', 'tr', 'p', 'dd'])
const CELLS = new Set(['td', 'th'])
const TABLES = new Set(['table'])

/**
 * The text of a node's descendants, whitespace collapsed, its first `max` characters: read in document
 * order and no further than those characters, so that links sharing one large section do not each read
 * all of it.
 */
export function leadingText(node: DomNode, max = 500): string {
  let text = ''
  const stack: DomNode[] = [...(node.children ?? [])].reverse()
  for (let visited = 0; stack.length > 0 && visited < MAX_CONTEXT_NODES; visited++) {
    const n = stack.pop()!
    if (n === APART) text += ' '
    else if (n.type === 'text' && n.data) {
      text += n.data.slice(0, max * 4).replace(/\s+/g, ' ')
      if (text.trimStart().length > max + 1) break
    } else if (n.children) {
      // a cell, a paragraph, a line break... is apart from the text around it, as a browser shows it:
      // a row's "5AS" and "Mathématiques" cells are two words, not "5ASMathématiques", which no rule
      // bounded by \b or a space could read
      const apart = n.name !== undefined && BLOCKS.has(n.name)
      if (apart) stack.push(APART)
      for (let i = n.children.length - 1; i >= 0; i--) stack.push(n.children[i]!)
      if (apart) text += ' '
    }
  }
  return squash(text, max)
}

/** Elements whose text a browser sets apart from the text around them (a line or a cell of its own). */
const BLOCKS = new Set([
  'address',
  'article',
  'aside',
  'blockquote',
  'br',
  'caption',
  'dd',
  'details',
  'div',
  'dl',
  'dt',
  'fieldset',
  'figcaption',
  'figure',
  'footer',
  'form',
  'h1',
  'h2',
  'h3',
  'h4',
  'h5',
  'h6',
  'header',
  'hr',
  'legend',
  'li',
  'main',
  'nav',
  'ol',
  'option',
  'p',
  'pre',
  'section',
  'summary',
  'table',
  'tbody',
  'td',
  'tfoot',
  'th',
  'thead',
  'tr',
  'ul',
])
/** A marker on leadingText's stack: the end of a block, where a space sets its text apart from what follows. */
const APART: DomNode = { type: 'apart', parent: null }

/** A cell's colspan as browsers read it: a positive integer, 1 when absent or invalid, at most 1000. */
const spanOf = (cell: DomNode) => {
  const n = Number.parseInt(cell.attribs?.colspan ?? '', 10)
  return Number.isFinite(n) && n >= 1 ? Math.min(n, 1000) : 1
}
const childrenNamed = (node: DomNode, names: ReadonlySet<string>) => (node.children ?? []).filter((c) => c.name !== undefined && names.has(c.name))

// per row, the column each of its cells starts at; per table, its header row's cells: each computed once,
// not once per link
const rowColumns = new WeakMap<DomNode, Map<DomNode, number>>()
const tableHeaders = new WeakMap<DomNode, { row: DomNode; cells: { end: number; cell: DomNode }[] } | null>()

function headerOf(table: DomNode) {
  if (tableHeaders.has(table)) return tableHeaders.get(table)!
  // parse5 puts rows written straight in a table into a tbody, so rows are in the table's row groups
  const first = childrenNamed(table, new Set(['thead', 'tbody', 'tfoot', 'tr']))[0]
  const firstRow = first?.name === 'tr' ? first : first ? childrenNamed(first, new Set(['tr']))[0] : undefined
  const thead = childrenNamed(table, new Set(['thead']))[0]
  const row = thead ? childrenNamed(thead, new Set(['tr']))[0] : firstRow && childrenNamed(firstRow, CELLS).some((c) => c.name === 'th') ? firstRow : undefined
  let end = 0
  const header = row ? { row, cells: childrenNamed(row, CELLS).map((cell) => ({ end: end += spanOf(cell), cell })) } : null
  tableHeaders.set(table, header)
  return header
}

function columnOf(row: DomNode, cell: DomNode): number {
  let columns = rowColumns.get(row)
  if (!columns) {
    columns = new Map()
    let column = 0
    for (const c of childrenNamed(row, CELLS)) {
      columns.set(c, column)
      column += spanOf(c)
    }
    rowColumns.set(row, columns)
  }
  return columns.get(cell) ?? 0
}

/**
 * The header of the column a link sits in: the cell of the table's header row (the first row of its
 * thead, else its first row when that row has a th) that covers the link's column, colspans counted on
 * both rows. Null when the link is not in a cell, the table has no header row, or the link is in it.
 * Rowspans are not followed: a header is read from the header row alone.
 */
export function columnHeader(_$: cheerio.CheerioAPI, link: Selection): string | null {
  const cell = nearest((link.get(0) as DomNode | undefined) ?? null, CELLS, true)
  const row = cell?.parent
  if (!cell || !row || row.name !== 'tr') return null
  const table = nearest(row, TABLES)
  const header = table ? headerOf(table) : null
  if (!header || header.row === row) return null
  const column = columnOf(row, cell)
  const h = header.cells.find((c) => column < c.end)
  return h ? leadingText(h.cell) || null : null
}

const HEADINGS = new Set(['h1', 'h2', 'h3', 'h4', 'h5', 'h6'])
/** The longest a heading is read: a heading is a title, not a paragraph. */
const MAX_HEADING_CHARS = 200

/**
 * The headings each of `targets` sits under: the page's outline at that point in document order (the last
 * h1 before it, the last h2 after that h1, ...; a heading ends the ones below its level), outermost
 * first, joined by " › ". A portal often says the grade in one heading and the subject in the next, above
 * a list whose items say neither ("5AS" › "Mathématiques" › "Leçon 6"). The page is walked once,
 * whatever the number of links; a heading inside a block (a div, a section) heads what follows it too.
 */
export function headingsOf(root: DomNode, targets: ReadonlySet<DomNode>): Map<DomNode, string | null> {
  const found = new Map<DomNode, string | null>()
  const outline: (string | undefined)[] = []
  const stack: DomNode[] = [...(root.children ?? [])].reverse()
  while (stack.length > 0 && found.size < targets.size) {
    const n = stack.pop()!
    if (n.name !== undefined && HEADINGS.has(n.name)) {
      const level = Number(n.name[1]) - 1
      outline.length = level
      outline[level] = leadingText(n, MAX_HEADING_CHARS) || undefined
      // a link inside a heading (a title that links its PDF) sits under that heading too
    }
    if (targets.has(n)) {
      const trail = outline.filter((h): h is string => h !== undefined)
      found.set(n, trail.length > 0 ? trail.join(' › ') : null)
    }
    if (n.children) { for (let i = n.children.length - 1; i >= 0; i--) stack.push(n.children[i]!) }
  }
  return found
}

/**
 * How deeply a listing page may nest its elements. The HTML parser's time grows with the square of the
 * depth (measured: docs/pipeline.md); a portal's listing nests a few dozen levels.
 */
