#!/usr/bin/env bash
# Proves that two migration chains make the same database. Each chain is applied on top of the platform
# shim (as .ci/run does before `supabase db push`) to a fresh database, both databases are dumped (schema
# and data: the migrations insert rows too), and the dumps are compared; any difference is printed and
# the exit status is 1.
#
#   scripts/schema-compare.sh <server-url> <dir-a> <dir-b>
#   scripts/schema-compare.sh <server-url> --baseline     (CI)
#
# The comparison runs twice, once for each path the migrations take:
#   1. two fresh databases on the PostgreSQL 15 server of <server-url>, where pg_cron is not usable (it
#      lives in one database of a server, cron.database_name): the local path;
#   2. database `postgres` of two throwaway clusters, made here from the PostgreSQL 15 binaries (PGBIN,
#      /usr/lib/postgresql/15/bin by default) with pg_cron preloaded: Supabase's path, cron jobs scheduled.
#      initdb refuses root: as root, the clusters run as the user postgres (runuser).
# What legitimately differs between two dumps is left out: pg_dump's \restrict tokens, and cron's job ids,
# host and port (the jobs are compared by name, schedule, command, database, user and state).
# SCHEMA_COMPARE_DUMPS=<dir> keeps the four dumps there.
#
# --baseline: the chain that the baseline migrations replaced, taken from git history at OLD_CHAIN_COMMIT,
# against the baseline files alone (later migrations are not part of the proof). A baseline file is never
# edited once it has landed (a schema change is a new migration, `supabase migration new`): each is checked
# against its SHA-256 below before the comparison.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
PGBIN=${PGBIN:-/usr/lib/postgresql/15/bin}

# The last commit of the chain that the baseline replaced: its supabase/migrations/ (35 migrations,
# 20261122000100 to 20261130000700) is what the baseline is proven equal to.
OLD_CHAIN_COMMIT=99c9026141e81f1e6901ab403e9c36c1efc471e8
# The baseline, one migration per concern, as it landed.
BASELINE=(
  "8574c7ad49c626a7d7a60f01fbb569fde79e8a2b6e6753558c4988a38d2fcdfd  20261101000100_foundation.sql"
  "acaee166c0f58efe845f00e715b95aa1c9e26417fb7fb41618880ba60928e042  20261101000200_identity.sql"
  "4b4adac31f04f7d02f5605fbdd08ab995dcb66913889789d330e3e0856dfbd37  20261101000300_wallet.sql"
  "663c19b9948b45fc61e0538bdacdd53a66eb8838acec45f8a83ce38a89186783  20261101000400_catalogue.sql"
  "38aac179b31d71b1e6d71ba90f44087297a3dd43488d8242d39384fa846fa2dd  20261101000500_search.sql"
  "b2315346ec817563438019d5645916c38cb1abc6c751a42bfea772c23a6e43df  20261101000600_ingestion.sql"
  "3b66e608c5d31583e2a2f040a291b14dafc6024da8ebf88d17756352b946dc9b  20261101000700_chat.sql"
)

die() {
  echo "schema-compare: $*" >&2
  exit 2
}

[ $# -ge 2 ] || die "usage: $0 <server-url> <dir-a> <dir-b> | $0 <server-url> --baseline"
server=$1
work=$(mktemp -d)
chmod 755 "$work"
databases=()
clusters=()
cleanup() {
  for c in "${clusters[@]}"; do as_postgres "$PGBIN/pg_ctl" -D "$c/data" -m immediate stop >/dev/null 2>&1 || true; done
  for d in "${databases[@]}"; do "$PGBIN/psql" "$server" -qAtc "drop database if exists $d with (force)" >/dev/null 2>&1 || true; done
  rm -rf "$work"
}
trap cleanup EXIT

as_postgres() {
  if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

if [ "$2" = "--baseline" ]; then
  git -C "$root" cat-file -e "$OLD_CHAIN_COMMIT^{commit}" 2>/dev/null || die "commit $OLD_CHAIN_COMMIT, whose \
supabase/migrations/ is the chain the baseline replaced, is not in this clone (a shallow clone?). The proof needs it: \
fetch the history (git fetch --unshallow, or a checkout with fetch-depth: 0) and run this again."
  dir_a="$work/old-chain"
  dir_b="$work/baseline"
  mkdir -p "$dir_a" "$dir_b"
  git -C "$root" archive "$OLD_CHAIN_COMMIT" supabase/migrations | tar -x -C "$work"
  mv "$work"/supabase/migrations/*.sql "$dir_a/"
  for entry in "${BASELINE[@]}"; do
    read -r sum file <<<"$entry"
    [ -f "$root/supabase/migrations/$file" ] || die "the baseline migration supabase/migrations/$file is missing"
    actual=$(sha256sum "$root/supabase/migrations/$file" | cut -d' ' -f1)
    [ "$actual" = "$sum" ] || die "supabase/migrations/$file is not the baseline that landed (sha256 $actual, not $sum): \
a migration is never edited once it has landed; make the change a new one (supabase migration new <name>)"
    cp "$root/supabase/migrations/$file" "$dir_b/"
  done
  echo "old chain: $(ls "$dir_a" | wc -l) migrations of $OLD_CHAIN_COMMIT; baseline: ${#BASELINE[@]} migrations"
else
  [ $# -eq 3 ] || die "usage: $0 <server-url> <dir-a> <dir-b>"
  dir_a=$2
  dir_b=$3
fi
for d in "$dir_a" "$dir_b"; do
  compgen -G "$d/*.sql" >/dev/null || die "no migrations (*.sql) in $d"
done

# apply <url> <dir>: the platform shim, then the directory's migrations in name (version) order
apply() {
  PGOPTIONS="-c client_min_messages=warning" "$PGBIN/psql" "$1" -q -v ON_ERROR_STOP=1 -f "$root/supabase/local/platform-shim.sql" >/dev/null
  local f
  for f in $(cd "$2" && ls -- *.sql | sort); do
    PGOPTIONS="-c client_min_messages=warning" "$PGBIN/psql" "$1" -q -v ON_ERROR_STOP=1 -f "$2/$f" >/dev/null ||
      die "migration $2/$f failed"
  done
}

# dump <url> <file>: pg_dump's schema and data, with what legitimately differs taken out, then what
# pg_dump does not print: the cron jobs without their ids, and the privileges extensions were created with
dump() {
  "$PGBIN/pg_dump" --dbname="$1" --no-sync --exclude-schema=supabase_migrations --exclude-table-data='cron.*' |
    sed -E 's/^\\(un)?restrict [A-Za-z0-9]+$/\\\1restrict (token)/' >"$2"
  {
    echo "-- cron jobs (pg_cron's job ids, host and port left out)"
    if [ "$("$PGBIN/psql" "$1" -qAtc "select to_regclass('cron.job') is not null")" = t ]; then
      "$PGBIN/psql" "$1" -qAt -v ON_ERROR_STOP=1 \
        -c "select jobname, schedule, command, database, username, active from cron.job order by jobname, command"
    else
      echo "(no pg_cron)"
    fi
    echo "-- privileges of extension objects as created (pg_init_privs; pg_dump prints only changes to them)"
    "$PGBIN/psql" "$1" -qAt -v ON_ERROR_STOP=1 \
      -c "select pg_describe_object(classoid, objoid, objsubid), initprivs from pg_init_privs where privtype = 'e' order by 1, 2::text"
  } >>"$2"
}

status=0
# compare <label> <dump-a> <dump-b>
compare() {
  if diff -u --label "$dir_a ($1)" --label "$dir_b ($1)" "$2" "$3"; then
    echo "same database ($1): $(wc -l <"$2") lines of dump"
  else
    echo "schema-compare: the two chains make different databases ($1)" >&2
    status=1
  fi
}

# 1. two fresh databases on the given server
[[ "$server" =~ ^(postgres(ql)?://[^/?]*)(/[^?]*)?(\?.*)?$ ]] || die "the server URL must be postgres://user@host:port/database: $server"
server_base=${BASH_REMATCH[1]}
server_query=${BASH_REMATCH[4]}
for side in a b; do
  db="schema_compare_${side}_$$"
  databases+=("$db")
  "$PGBIN/psql" "$server" -qAt -v ON_ERROR_STOP=1 -c "create database $db" >/dev/null
  url="${server_base}/$db${server_query}"
  if [ $side = a ]; then apply "$url" "$dir_a"; else apply "$url" "$dir_b"; fi
  dump "$url" "$work/server-$side.sql"
done
compare "two databases of $server: pg_cron not usable" "$work/server-a.sql" "$work/server-b.sql"

# 2. database postgres of two throwaway clusters with pg_cron, one after the other
for side in a b; do
  cluster="$work/cluster-$side"
  mkdir -p "$cluster"
  [ "$(id -u)" != 0 ] || chown postgres:postgres "$cluster"
  clusters+=("$cluster")
  as_postgres "$PGBIN/initdb" -D "$cluster/data" -U postgres --auth=trust --no-sync -E UTF8 >/dev/null
  # a socket in its own directory and no TCP port: nothing to collide with
  as_postgres "$PGBIN/pg_ctl" -D "$cluster/data" -l "$cluster/server.log" -w -o "-p 5432 -k $cluster -c listen_addresses='' \
-c fsync=off -c shared_preload_libraries=pg_cron -c cron.database_name=postgres" start >/dev/null
  url="postgresql://postgres@/postgres?host=$cluster&port=5432"
  if [ $side = a ]; then apply "$url" "$dir_a"; else apply "$url" "$dir_b"; fi
  [ "$("$PGBIN/psql" "$url" -qAtc "select count(*) from pg_extension where extname = 'pg_cron'")" = 1 ] ||
    die "pg_cron is not installed in database postgres of the throwaway cluster: is pg_cron installed (scripts/install-postgres.sh)?"
  dump "$url" "$work/cluster-$side.sql"
  as_postgres "$PGBIN/pg_ctl" -D "$cluster/data" -m fast stop >/dev/null
done
compare "database postgres of two clusters: pg_cron scheduling" "$work/cluster-a.sql" "$work/cluster-b.sql"

if [ -n "${SCHEMA_COMPARE_DUMPS:-}" ]; then
  mkdir -p "$SCHEMA_COMPARE_DUMPS"
  cp "$work"/server-[ab].sql "$work"/cluster-[ab].sql "$SCHEMA_COMPARE_DUMPS/"
fi
exit $status
