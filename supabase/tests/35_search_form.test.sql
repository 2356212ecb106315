-- The search form of Arabic words (20261101000500_search.sql): the article and every leading و are taken
-- off before the stemmer, so a word has one lexeme with or without them.
begin;
create extension if not exists pgtap with schema extensions;
set local search_path = public, extensions;
select plan(7);

select is(private.search_vector('الوجوب')::text, private.search_vector('وجوب')::text, 'وجوب and الوجوب share a lexeme');
select is(private.search_vector('والوزير')::text, private.search_vector('وزير')::text, 'وزير and والوزير share a lexeme');
select is(private.search_vector('الولاية')::text, private.search_vector('ولاية')::text, 'ولاية and الولاية share a lexeme');
select isnt(private.search_vector('ولاية')::text, private.search_vector('ولا')::text, 'ولاية is not ولا ("and not")');
select is(private.search_vector('وولاتة')::text, private.search_vector('ولاتة')::text, 'وولاتة ("and Oualata") and ولاتة share a lexeme');
select is(private.search_vector('وقت')::text, '''وقت'':1', 'a word of three letters keeps its و');
select is(private.search_vector('التي الذي')::text, '', 'التي and الذي are stop words');

select * from finish();
rollback;
