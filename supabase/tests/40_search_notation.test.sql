-- The search form of notation (20261101000500_search.sql): a lesson stores a formula as the page writes it
-- (x², uₙ₊₁, µm, E_(c)), and a question that types x2, un+1, μm or Ec meets it.
begin;
create extension if not exists pgtap with schema extensions;
set local search_path = public, extensions;
select plan(7);

select is(private.search_vector('x²')::text, private.search_vector('x2')::text, 'x² and x2 share a lexeme');
select is(private.search_vector('uₙ₊₁')::text, private.search_vector('un+1')::text, 'uₙ₊₁ reads as un+1');
select is(private.search_vector('10⁻³ qⁿ')::text, private.search_vector('10-3 qn')::text, 'superscript digits, signs and letters read as theirs');
select is(private.search_vector('2,5 µm')::text, private.search_vector('2,5 μm')::text, 'the micro sign is the Greek mu');
select is(private.search_vector('E_(c) x^(q)')::text, private.search_vector('Ec xq')::text, 'the markup of a script with no Unicode form is taken off');
select is(private.search_vector('½ m v²')::text, private.search_vector('1/2 m v2')::text, 'a fraction character reads as its digits');
select isnt(private.search_vector('(a)/(b)')::text, '', 'a fraction''s parts stay words');

select * from finish();
rollback;
