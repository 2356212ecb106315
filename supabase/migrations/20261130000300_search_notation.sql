-- The search form reads a formula's notation as its letters and digits, as the offline rerank and the
-- embedder do (functions-shared/lib/fold.ts: foldText): extraction now keeps the text as the page writes
-- it (x², uₙ₊₁, µm, E_(c) where Unicode has no subscript c), and a question types x2, un+1, μm, Ec.
-- The parser read "x²" as the word "x" and the sign apart, so the lesson never met the question.
-- The stored vectors and the document frequencies are rebuilt with the new form.

-- why: the search vector of a text (never shown); see 20261122000900_hybrid_search.sql for its form,
-- 20261123000100_search_cost.sql for its stop list, 20261124000300_search_arabic_prefixes.sql for the
-- Arabic prefixes and 20261125000100_search_format_characters.sql for the format characters.
create or replace function private.search_vector(p_text text) returns tsvector
language plpgsql immutable parallel safe strict set search_path = '' as $$
begin
  return (select pg_catalog.ts_delete(
           to_tsvector('pg_catalog.french', regexp_replace(f, '[' || chr(1536) || '-' || chr(1791) || ']+', ' ', 'g'))
             || to_tsvector('pg_catalog.arabic', regexp_replace(f, '[a-z0-9]+', ' ', 'g')),
           array['a', 'va', 'aid', 'alor', 'bien', 'ca', 'cec', 'cel', 'combien', 'comment', 'dir', 'dis', 'dois',
                 'doit', 'doivent', 'donc', 'est-ce', 'expliqu', 'explique-moi', 'fair', 'fais',
                 'fait', 'faut', 'le', 'lecon', 'merc', 'peut', 'peux', 'pourquoi', 'quand', 'quel',
                 'quelqu', 'quoi', 'salut', 'signif', 'stp', 'svp', 'tre', 'veut', 'veut-dir',
                 'veux', 'اريد', 'اشرح', 'اشرحل', 'اشنه', 'اعرف', 'اعلاش', 'ال', 'الا', 'الت',
                 'الذ', 'تي', 'ان', 'او', 'اين', 'بعض', 'بغي', 'تلك', 'ثم', 'ذ', 'ذا', 'ذلك', 'ذين', 'شن',
                 'شنه', 'شنهو', 'شنو', 'عل', 'علاش', 'علي', 'عن', 'عند', 'في', 'فيه', 'قد', 'كان',
                 'كل', 'كيف', 'كيفاش', 'كيفتاش', 'لا', 'لاش', 'لقد', 'لم', 'لماذ', 'لي', 'ليا',
                 'ما', 'ماذ', 'ماه', 'ماهو', 'مت', 'مع', 'معن', 'من', 'نبغ', 'نعم', 'هذا', 'هذه',
                 'هل', 'هم', 'هو', 'هي', 'وضح', 'يا', 'ياسر', 'يعن', 'يكون',
                 'اذكر', 'امال', 'امنين', 'انتوم', 'اهون', 'باش', 'ذاك', 'ذي', 'ضبط', 'الل', 'شحال',
                 'فاهم', 'فاين', 'فين', 'قاع', 'قول', 'مان', 'مم', 'منه', 'منهو', 'منين', 'نعرف', 'واعر', 'اشو'])
    from (select regexp_replace(
                   regexp_replace(
                     regexp_replace(
                       translate(lower(extensions.unaccent('extensions.unaccent'::regdictionary,
                                   -- format characters first (Unicode Cf but the zero-width space, as foldText), and
                                   -- the zero-width space as a space (the parser would read it as part of a word)
                                   replace(regexp_replace(
                                     -- notation as its letters and digits, as foldText's NFKD and withoutScriptMarkup
                                     -- make it: x² as x2, uₙ₊₁ as un+1, µ as μ, E_(c) as Ec
                                     regexp_replace(translate(p_text, '⁰¹²³⁴⁵⁶⁷⁸⁹⁺⁻⁼⁽⁾ᵃᵇᶜᵈᵉᶠᵍʰⁱʲᵏˡᵐⁿᵒᵖʳˢᵗᵘᵛʷˣʸᶻᴬᴮᴰᴱᴳᴴᴵᴶᴷᴸᴹᴺᴼᴾᴿᵀᵁⱽᵂ₀₁₂₃₄₅₆₇₈₉₊₋₌₍₎ₐₑₕᵢⱼₖₗₘₙₒₚᵣₛₜᵤᵥₓµ', '0123456789+-=()abcdefghijklmnoprstuvwxyzABDEGHIJKLMNOPRTUVW0123456789+-=()aehijklmnoprstuvxμ'), '[_^]\(([^()]*)\)', '\1', 'g'),
                                     '[' || chr(173) || chr(1536) || '-' || chr(1541) || chr(1564) || chr(1757) || chr(1807)
                                     || chr(2192) || chr(2193) || chr(2274) || chr(6158) || chr(8204) || '-' || chr(8207) || chr(8234) || '-' || chr(8238)
                                     || chr(8288) || '-' || chr(8292) || chr(8294) || '-' || chr(8303) || chr(65279) || chr(65529) || '-' || chr(65531)
                                     || chr(69821) || chr(69837) || chr(78896) || '-' || chr(78911) || chr(113824) || '-' || chr(113827)
                                     || chr(119155) || '-' || chr(119162) || chr(917505) || chr(917536) || '-' || chr(917631) || ']', '', 'g'), chr(8203), ' '))),
                                 -- أ إ آ ٱ, ى, ة, گ ڭ, the Persian ی ک ہ, the Arabic-Indic digits, and tatweel (removed: nothing stands for it)
                                 chr(1571) || chr(1573) || chr(1570) || chr(1649) || chr(1609) || chr(1577) || chr(1711) || chr(1709)
                                   || chr(1740) || chr(1705) || chr(1729) || '٠١٢٣٤٥٦٧٨٩' || chr(1600),
                                 -- ا ا ا ا, ي, ه, ق ق, ي ك ه, 0-9
                                 chr(1575) || chr(1575) || chr(1575) || chr(1575) || chr(1610) || chr(1607) || chr(1602) || chr(1602)
                                   || chr(1610) || chr(1603) || chr(1607) || '0123456789'),
                       -- harakat, tanwin, shadda, sukun and the dagger alef
                       '[' || chr(1611) || '-' || chr(1631) || chr(1648) || ']', '', 'g'),
                     -- a word made of an optional و/ف, then بال, كال, لل or ال, then the noun: the noun alone
                     '(^|[^' || chr(1569) || '-' || chr(1610) || '])(' || chr(1608) || '|' || chr(1601) || ')?('
                       || chr(1576) || chr(1575) || chr(1604) || '|' || chr(1603) || chr(1575) || chr(1604) || '|' || chr(1604) || chr(1604)
                       || '|' || chr(1575) || chr(1604) || ')([' || chr(1569) || '-' || chr(1610) || ']{2,})',
                     '\1\4', 'g'),
                   -- then every و that begins a word, while three letters stay
                   '(^|[^' || chr(1569) || '-' || chr(1610) || '])' || chr(1608) || '+([' || chr(1569) || '-' || chr(1610) || ']{3,})',
                   '\1\2', 'g') as f) s);
end;
$$;

-- the stored vectors follow the new form (an update recomputes the generated column), then the counts
update public.document_chunks set content = content;
truncate private.search_lexemes;
insert into private.search_lexemes (lexeme, chunks)
select l, count(*) from (select unnest(pg_catalog.tsvector_to_array(search_tsv)) as l from public.document_chunks
                         union all select '' from public.document_chunks) x
 group by l;
