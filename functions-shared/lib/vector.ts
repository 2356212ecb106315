// A vector as pgvector reads it in text ('[0.1234567,...]'): seven decimals, the precision the index keeps
// anyway, and a tenth of the text of a full double.
export const vectorLiteral = (v: readonly number[]): string => `[${v.map((x) => x.toFixed(7)).join(',')}]`
