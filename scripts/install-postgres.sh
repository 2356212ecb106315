#!/usr/bin/env bash
# Installs a local PostgreSQL 15 with pgvector, pgTAP, pg_cron and plpgsql_check on Debian (run as root):
# Debian's postgresql-15, postgresql-server-dev-15, postgresql-15-pgtap, -cron and -plpgsql-check, and pgvector built from
# Debian's pgvector source package of the next release (trixie: 0.8, with iterative index scans), fetched
# through a deb-src entry that is used for that download only.
set -euo pipefail

PG_MAJOR=15
PG_CONFIG=/usr/lib/postgresql/$PG_MAJOR/bin/pg_config
PGVECTOR_SUITE=${PGVECTOR_SUITE:-trixie}
MIN_PGVECTOR=0.8.0

missing=()
for pkg in postgresql-$PG_MAJOR postgresql-server-dev-$PG_MAJOR postgresql-$PG_MAJOR-pgtap postgresql-$PG_MAJOR-cron postgresql-$PG_MAJOR-plpgsql-check dpkg-dev make gcc; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "installing: ${missing[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

installed_vector() {
  local control
  control="$($PG_CONFIG --sharedir)/extension/vector.control"
  [ -f "$control" ] && sed -n "s/^default_version = '\(.*\)'/\1/p" "$control"
}

current=$(installed_vector || true)
if [ -n "$current" ] && [ "$(printf '%s\n%s\n' "$MIN_PGVECTOR" "$current" | sort -V | head -1)" = "$MIN_PGVECTOR" ]; then
  echo "pgvector $current already installed"
else
  work=$(mktemp -d)
  chmod 755 "$work" # apt's download user must reach it
  trap 'rm -rf "$work"' EXIT
  # The mirror this machine already uses, as configured (deb822 or one-line format).
  mirror=$(awk '/^URIs:/ {print $2; exit}' /etc/apt/sources.list.d/*.sources 2>/dev/null || true)
  [ -n "$mirror" ] || mirror=$(awk '$1 == "deb" {print $2; exit}' /etc/apt/sources.list 2>/dev/null || true)
  [ -n "$mirror" ] || { echo "no Debian mirror configured for apt" >&2; exit 1; }
  mkdir -p "$work/sources.d" "$work/lists/partial"
  cat > "$work/sources.d/pgvector-src.sources" <<SRC
Types: deb-src
URIs: $mirror
Suites: $PGVECTOR_SUITE
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRC
  apt_isolated=(-o Dir::Etc::SourceList=/dev/null -o Dir::Etc::SourceParts="$work/sources.d" -o Dir::State::Lists="$work/lists")
  apt-get "${apt_isolated[@]}" update -qq
  (cd "$work" && apt-get "${apt_isolated[@]}" source -qq pgvector >/dev/null)
  src=$(find "$work" -maxdepth 1 -type d -name 'pgvector-*' | head -1)
  make -s -C "$src" PG_CONFIG=$PG_CONFIG OPTFLAGS="" >/dev/null
  make -s -C "$src" PG_CONFIG=$PG_CONFIG install >/dev/null
  echo "pgvector $(installed_vector) installed from $PGVECTOR_SUITE's source package"
fi
