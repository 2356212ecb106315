-- The search form takes the article and a leading wa- off every Arabic word itself, before the Arabic
-- Snowball stemmer sees it. The stemmer's own handling of both depends on the word's length and on the
-- article being there, so a word and its form with the article often had two stems: وجوب → جوب but
-- الوجوب → وجوب, وزير → زير but الوزير → وزير, ولاية → ولا (the stem of the common "ولا", "and not")
-- but الولاية → ولايه, وولاتة ("and Oualata") → ولات but ولاتة → ولا. A question that wrote
-- the word one way did not meet a lesson that wrote it the other. Now:
-- - a word made of an optional و/ف, then بال, كال, لل or ال, then at least two letters: those letters
--   (until now the article stayed, for the stemmer to take off);
-- - then every و at the start of a word, while three letters stay (as the offline rerank's keys do,
--   functions-shared/ai/offline.ts: وقت and ولد keep theirs);
-- - the stop list: التي is now "تي" (الذي "ذي" and اللي "لي" were there already).
-- Measured on the retrieval evaluation (offline provider, 180 questions without grade and subject):
-- doc@1 88.9 % → 90.0 %, page@1 78.3 % → 78.9 %, clarified 1.7 % → 1.1 %; with them, unchanged.
-- The stored vectors and the document frequencies are rebuilt with the new form.

-- why: the search vector of a text (never shown); see 20261122000900_hybrid_search.sql for its form and
-- 20261123000100_search_cost.sql for its stop list.
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
                       translate(lower(extensions.unaccent('extensions.unaccent'::regdictionary, p_text)),
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
