-- Closed by default, enforced by the schema: a function created from here on is executable by no one but
-- its owner and the service role until its migration grants it, so a forgotten revoke can no longer
-- expose a security-definer money RPC through /rest/v1/rpc (basejump's alter default privileges).
-- Two statements, because PostgreSQL grants EXECUTE to PUBLIC globally and a per-schema default cannot
-- take a global grant back; the per-schema one removes the platform's grants to the API roles (Supabase,
-- and the local shim, grant everything in public to anon and authenticated by default).
-- Applies to objects this role (the migrations' role) creates. Extensions live in schema extensions,
-- whose functions (pgvector's operators, pgTAP) every role calls as before: that schema keeps PUBLIC's
-- EXECUTE by a per-schema default. A helper in public or private that the API roles must call is granted
-- by its migration.
alter default privileges revoke execute on functions from public;
alter default privileges in schema public revoke execute on functions from anon, authenticated;
alter default privileges in schema extensions grant execute on functions to public;
