-- private.search_vector gives the vector of its baseline (20261101000500_search.sql, copied below as
-- private.search_vector_baseline) on every kind of text: French, Arabic and both, notation (superscripts,
-- subscripts, µ, script markup), the Arabic letter forms and digits it folds, format characters, and
-- generated mixes of all of them; the fast paths of 20261128084923_search_vector_translate_gated skip
-- only work that would change nothing.
begin;
create extension if not exists pgtap with schema extensions;
set local search_path = public, extensions;
select plan(3);

create function private.search_vector_baseline(p_text text) returns tsvector
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

create temp table texts (t text);
insert into texts values
  ('Le théorème de Pythagore : dans un triangle rectangle, a² + b² = c². L''énergie E_(c) = ½ m v².'),
  ('La suite uₙ₊₁ = 2uₙ + 1 ; 10⁻³ mol/L ; 2,5 µm ; x^(q) ; H₂O et CO₂.'),
  ('الدرس الأول: إذا كانت الدالة معرفة على المجال فإن المشتقة موجودة. والطالب يكتب بالقلم كالمعلم للطالب.'),
  ('أإآٱ ىة گڭ یکہ ٠١٢٣٤٥٦٧٨٩ ـــ مَدْرَسَةٌ ٰ'),
  ('mixte: la fonction الدالة f(x) = x² ' || chr(8203) || 'zero' || chr(173) || 'width' || chr(8206) || chr(65279) || ' fin'),
  ('explique-moi pourquoi est-ce que la leçon dit ça ... http://ex.com/a nₗ/_le ../b'),
  ('plain ascii only, with punctuation!? (and) [brackets] 3.14 1,5 v1.2.3'),
  ('');
-- generated mixes: each character drawn from one alphabet of every kind above, in a different order each time
insert into texts
select string_agg(substr(a.s, 1 + ((i * 7919 + j * 104729 + j * j * 31) % length(a.s)), 1 + (i + j) % 3), '' order by j)
  from (select 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789éèêàçœÉ  .,;:!?()[]/_-~''"«»’–…°×→μπ½'
               || '⁰¹²³⁴⁵⁶⁷⁸⁹⁺⁻⁼⁽⁾ᵃᵇᶜᵈᵉᶠᵍʰⁱʲᵏˡᵐⁿᵒᵖʳˢᵗᵘᵛʷˣʸᶻᴬᴮᴰᴱᴳᴴᴵᴶᴷᴸᴹᴺᴼᴾᴿᵀᵁⱽᵂ₀₁₂₃₄₅₆₇₈₉₊₋₌₍₎ₐₑₕᵢⱼₖₗₘₙₒₚᵣₛₜᵤᵥₓµ_(^('
               || 'ابتثجحخدذرزسشصضطظعغفقكلمنهويءأإآٱىةگڭیکہ٠١٢٣٤٥٦٧٨٩ـ' || chr(1611) || chr(1616) || chr(1617) || chr(1648)
               || ' ال وال بال كال لل ف و ' || chr(173) || chr(8203) || chr(8204) || chr(8205) || chr(8207) || chr(65279) as s) a,
       generate_series(1, 300) i, generate_series(1, 40) j
 group by i;

-- each character of the two lists translate() folds, alone in a word, in French and in Arabic
insert into texts
select format('note x%sy %s fin', c, c) from regexp_split_to_table('⁰¹²³⁴⁵⁶⁷⁸⁹⁺⁻⁼⁽⁾ᵃᵇᶜᵈᵉᶠᵍʰⁱʲᵏˡᵐⁿᵒᵖʳˢᵗᵘᵛʷˣʸᶻᴬᴮᴰᴱᴳᴴᴵᴶᴷᴸᴹᴺᴼᴾᴿᵀᵁⱽᵂ₀₁₂₃₄₅₆₇₈₉₊₋₌₍₎ₐₑₕᵢⱼₖₗₘₙₒₚᵣₛₜᵤᵥₓµ', '') c
union all
select format('كتب%sعلم %s درس', c, c) from regexp_split_to_table('أإآٱىةگڭیکہ٠١٢٣٤٥٦٧٨٩ـ', '') c;

select is((select count(*) from texts where private.search_vector(t)::text is distinct from private.search_vector_baseline(t)::text), 0::bigint,
          'the same vector as the baseline on every text');
select cmp_ok((select count(*) from texts where private.search_vector_baseline(t)::text <> ''), '>', 250::bigint,
          'the texts have words to index');
select is(private.search_vector('x² uₙ₊₁ أستاذ')::text, private.search_vector('x2 un+1 استاذ')::text,
          'notation and the Arabic letter forms are still folded');

select * from finish();
rollback;
