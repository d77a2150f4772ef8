#!/usr/bin/env bash
# Property-based API testing: schemathesis (PyPI) against a running Postern's
# /api/v1/openapi.json, signed in as a site administrator, every operation.
# Fails on any 5xx and on any response that does not match the description.
# Expects the postern binary to be built (tests/run.sh does that).
set -euo pipefail
cd "$(dirname "$0")/.."

as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

target="${CARGO_TARGET_DIR:-target}"
bin="$target/debug/postern"
[ -x "$bin" ] || { echo "build postern first: cargo build -p postern" >&2; exit 1; }

cache="${XDG_CACHE_HOME:-$HOME/.cache}/postern"
venv="$cache/venv"
version="4.32.5"
if ! "$venv/bin/schemathesis" --version 2>/dev/null | grep -q "$version"; then
  if ! python3 -c 'import venv, ensurepip' 2>/dev/null; then
    as_root apt-get update -qq
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3 python3-venv
  fi
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q "schemathesis==$version"
fi

work="$(mktemp -d)"
server_pid=""
cleanup() {
  [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

admin_password='schemathesis-admin'
cat > "$work/app.ini" <<INI
[server]
HTTP_ADDR = 127.0.0.1
HTTP_PORT = 0
ROOT_URL = http://127.0.0.1/
APP_DATA_PATH = $work/data
INI
"$bin" --config "$work/app.ini" admin user create --username root --email root@example.com --password "$admin_password" --admin
"$bin" --config "$work/app.ini" admin user create --username plain --email plain@example.com --password 'schemathesis-plain'

"$bin" --config "$work/app.ini" web > "$work/stdout" 2> "$work/server.log" &
server_pid=$!
for _ in $(seq 1 600); do
  grep -q "Postern listening on" "$work/stdout" 2>/dev/null && break
  sleep 0.1
done
base="$(sed -n 's/^Postern listening on //p' "$work/stdout")"
[ -n "$base" ] || { cat "$work/server.log"; echo "postern did not start" >&2; exit 1; }

# Real data for the path parameters, so that operations reach their logic
# rather than answering 404 to random names.
# And a token with every scope: a password is checked with argon2id, made
# to be slow, on each of the run's thousands of requests; a token is not.
token="$("$venv/bin/python" - "$base" "$admin_password" <<'PY'
import sys, requests
base, password = sys.argv[1], sys.argv[2]
r = requests.post(f"{base}/api/v1/user/repos", auth=("root", password), json={"name": "demo"})
assert r.status_code == 201, r.text
r = requests.post(f"{base}/api/v1/users/root/tokens", auth=("root", password),
                  json={"name": "schemathesis", "scopes": ["all"]})
assert r.status_code == 201, r.text
print(r.json()["sha1"])
PY
)"
cat > "$work/schemathesis.toml" <<TOML
[parameters]
"path.owner" = "root"
"path.repo" = "demo"
"path.username" = "plain"
"path.collaborator" = "plain"
"path.ref" = "heads"
TOML

status=0
run() {
  "$venv/bin/schemathesis" --config-file "$work/schemathesis.toml" run "$base/api/v1/openapi.json" \
    --checks not_a_server_error,response_schema_conformance \
    --max-examples 30 \
    --seed 20261121 \
    --no-color \
    "$@" ${SCHEMATHESIS_ARGS:-} || status=$?
}
# Every operation but the token ones with the administrator's token;
# revoking sessions, which the run does, cannot sign it out. The token
# operations with Basic authentication: creating a token needs a password
# (or a session), and deleting tokens must not delete the run's own. The
# stateful phase is left out: its link inference reads our `_links` hrefs
# as links between unrelated operations and refuses to start.
tokens='/users/\{username\}/tokens'
run --phases examples,coverage,fuzzing -H "Authorization: token $token" --exclude-path-regex "$tokens"
run --phases examples,coverage,fuzzing --auth "root:$admin_password" --include-path-regex "$tokens"
if [ "$status" != 0 ]; then
  echo "== server log"; tail -50 "$work/server.log"
fi
exit "$status"
