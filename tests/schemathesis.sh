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

cat > "$work/app.ini" <<INI
[server]
HTTP_ADDR = 127.0.0.1
HTTP_PORT = 0
ROOT_URL = http://127.0.0.1/
APP_DATA_PATH = $work/data
INI
"$bin" --config "$work/app.ini" admin user create --username root --email root@example.com --password 'schemathesis-admin' --admin
"$bin" --config "$work/app.ini" admin user create --username plain --email plain@example.com --password 'schemathesis-plain'

"$bin" --config "$work/app.ini" web > "$work/stdout" 2> "$work/server.log" &
server_pid=$!
for _ in $(seq 1 600); do
  grep -q "Postern listening on" "$work/stdout" 2>/dev/null && break
  sleep 0.1
done
base="$(sed -n 's/^Postern listening on //p' "$work/stdout")"
[ -n "$base" ] || { cat "$work/server.log"; echo "postern did not start" >&2; exit 1; }

# Sign in through the real form (CSRF token and all) and print the cookie.
sign_in() {
  "$venv/bin/python" - "$base" <<'PY'
import re, sys, requests
base = sys.argv[1]
s = requests.Session()
page = s.get(f"{base}/user/login").text
csrf = re.search(r'name="_csrf" value="([^"]+)"', page).group(1)
r = s.post(f"{base}/user/login", data={"user_name": "root", "password": "schemathesis-admin", "_csrf": csrf}, allow_redirects=False)
assert r.status_code == 303, r.status_code
print(s.cookies["postern_session"])
PY
}
cookie="$(sign_in)"

status=0
run() {
  local cookie="$1" phases="$2"
  shift 2
  "$venv/bin/schemathesis" run "$base/api/v1/openapi.json" \
    --header "Cookie: postern_session=$cookie" \
    --checks not_a_server_error,response_schema_conformance \
    --max-examples 30 \
    --seed 20261121 \
    --no-color \
    --phases "$phases" "$@" ${SCHEMATHESIS_ARGS:-} || status=$?
}
# The API lets a user revoke any of their sessions, the current one too, and
# schemathesis learns session ids from responses: it would sign itself out
# half-way. So every operation but DELETE runs first, DELETE then runs with a
# fresh session, and the stateful phase (which follows links) last, again with
# a fresh session.
run "$cookie" examples,coverage,fuzzing --exclude-method DELETE
run "$(sign_in)" examples,coverage,fuzzing --include-method DELETE
run "$(sign_in)" stateful
if [ "$status" != 0 ]; then
  echo "== server log"; tail -50 "$work/server.log"
fi
exit "$status"
