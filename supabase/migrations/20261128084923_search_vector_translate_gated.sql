-- The search form of a chunk's text (private.search_vector, 20261101000500_search.sql), the same vector
-- made in less time: the two translate() calls (notation, and the Arabic letter forms and digits) are
-- where most of the time of a French chunk went, since translate() looks each character of the text up in
-- its list of characters one by one; a text with none of a list's characters is now left as it is
-- without that walk (translate() changes only the characters of its list, so the vector is the same).
-- The steps, their order and every pattern are those of the baseline, one PL/pgSQL assignment each.
-- Chunks are written through it (the generated search_tsv of document_chunks) and questions read
-- through it (hybrid_search); docs/pipeline.md has the figures.

create or replace function private.search_vector(p_text text) returns tsvector
language plpgsql immutable parallel safe strict set search_path = '' as $$
declare
  f text := p_text;
begin
  -- notation as its letters and digits (x² as x2, uₙ₊₁ as un+1, µ as μ, E_(c) as Ec); translate() is
  -- slow on long texts, and a text without any of its characters is left as it is
  if f ~ ('[' || '⁰¹²³⁴⁵⁶⁷⁸⁹⁺⁻⁼⁽⁾ᵃᵇᶜᵈᵉᶠᵍʰⁱʲᵏˡᵐⁿᵒᵖʳˢᵗᵘᵛʷˣʸᶻᴬᴮᴰᴱᴳᴴᴵᴶᴷᴸᴹᴺᴼᴾᴿᵀᵁⱽᵂ₀₁₂₃₄₅₆₇₈₉₊₋₌₍₎ₐₑₕᵢⱼₖₗₘₙₒₚᵣₛₜᵤᵥₓµ' || ']') then
    f := translate(f, '⁰¹²³⁴⁵⁶⁷⁸⁹⁺⁻⁼⁽⁾ᵃᵇᶜᵈᵉᶠᵍʰⁱʲᵏˡᵐⁿᵒᵖʳˢᵗᵘᵛʷˣʸᶻᴬᴮᴰᴱᴳᴴᴵᴶᴷᴸᴹᴺᴼᴾᴿᵀᵁⱽᵂ₀₁₂₃₄₅₆₇₈₉₊₋₌₍₎ₐₑₕᵢⱼₖₗₘₙₒₚᵣₛₜᵤᵥₓµ',
                   '0123456789+-=()abcdefghijklmnoprstuvwxyzABDEGHIJKLMNOPRTUVW0123456789+-=()aehijklmnoprstuvxμ');
  end if;
  -- the format characters (Unicode Cf but the zero-width space, as foldText) out, the zero-width space
  -- as a space, Latin accents removed, lower case
  f := lower(extensions.unaccent('extensions.unaccent'::regdictionary,
         replace(regexp_replace(regexp_replace(f, '[_^]\(([^()]*)\)', '\1', 'g'),
                   '[' || chr(173) || chr(1536) || '-' || chr(1541) || chr(1564) || chr(1757) || chr(1807) || chr(2192) || chr(2193) || chr(2274) || chr(6158) || chr(8204) || '-' || chr(8207) || chr(8234) || '-' || chr(8238) || chr(8288) || '-' || chr(8292) || chr(8294) || '-' || chr(8303) || chr(65279) || chr(65529) || '-' || chr(65531) || chr(69821) || chr(69837) || chr(78896) || '-' || chr(78911) || chr(113824) || '-' || chr(113827) || chr(119155) || '-' || chr(119162) || chr(917505) || chr(917536) || '-' || chr(917631) || ']', '', 'g'), chr(8203), ' ')));
  -- أ إ آ ٱ, ى, ة, گ ڭ, the Persian ی ک ہ, the Arabic-Indic digits, and tatweel (removed): only where one is
  if f ~ ('[' || chr(1571) || chr(1573) || chr(1570) || chr(1649) || chr(1609) || chr(1577) || chr(1711) || chr(1709) || chr(1740) || chr(1705) || chr(1729) || '٠١٢٣٤٥٦٧٨٩' || chr(1600) || ']') then
    f := translate(f, chr(1571) || chr(1573) || chr(1570) || chr(1649) || chr(1609) || chr(1577) || chr(1711) || chr(1709) || chr(1740) || chr(1705) || chr(1729) || '٠١٢٣٤٥٦٧٨٩' || chr(1600),
                   chr(1575) || chr(1575) || chr(1575) || chr(1575) || chr(1610) || chr(1607) || chr(1602) || chr(1602) || chr(1610) || chr(1603) || chr(1607) || '0123456789');
  end if;
  -- harakat, tanwin, shadda, sukun and the dagger alef; the article and a leading wa- (as the baseline says why)
  f := regexp_replace(
         regexp_replace(
           regexp_replace(f, '[' || chr(1611) || '-' || chr(1631) || chr(1648) || ']', '', 'g'),
           '(^|[^' || chr(1569) || '-' || chr(1610) || '])(' || chr(1608) || '|' || chr(1601) || ')?(' || chr(1576) || chr(1575) || chr(1604) || '|' || chr(1603) || chr(1575) || chr(1604) || '|' || chr(1604) || chr(1604) || '|' || chr(1575) || chr(1604) || ')([' || chr(1569) || '-' || chr(1610) || ']{2,})', '\1\4', 'g'),
         '(^|[^' || chr(1569) || '-' || chr(1610) || '])' || chr(1608) || '+([' || chr(1569) || '-' || chr(1610) || ']{3,})', '\1\2', 'g');
  -- then its Latin words through the French configuration and its Arabic words through the Arabic one
  return pg_catalog.ts_delete(
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
                 'فاهم', 'فاين', 'فين', 'قاع', 'قول', 'مان', 'مم', 'منه', 'منهو', 'منين', 'نعرف', 'واعر', 'اشو']);
end;
$$;
