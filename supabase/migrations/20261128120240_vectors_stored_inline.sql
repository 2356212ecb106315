-- Search: a vector row is kept whole in its page, its embedding with it, not out of line in the TOAST
-- table. A vector(1536) is 6,152 bytes, above the 2 kB past which PostgreSQL moves a row's largest
-- values out: every distance the search computed (a namespace's exact ranking, the HNSW path's exact
-- re-ranking of its K, a text hit's distance) first read the embedding back through the TOAST index,
-- in four pieces, and that was the largest part of a search's time (docs/benchmarks.md). With the
-- table's toast_tuple_target at its maximum, a row is left whole whenever it fits a page (a 1536-float
-- embedding, its ids and its light metadata do); only a row that does not fit has its largest values
-- moved out, as before. An ingestion writes one row per chunk instead of a row and four TOAST pieces.
-- Rows written before this keep their embedding out of line until the table is rewritten
-- (`vacuum full public.vectors`, docs/deploying.md).

-- why: read in the row, without a TOAST lookup per distance
alter table public.vectors set (toast_tuple_target = 8160);
