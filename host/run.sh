#!/usr/bin/env bash
# Runs Postern on a fresh Debian machine with Rust: installs what building
# it needs when missing (Debian's libxmlsec1-dev, libclang-dev and
# pkg-config for SAML's XML signatures; the wasm32-wasip2 target for the
# built-in plugins), then `cargo run -p postern -- web` with the arguments
# given (none: SQLite in ./data, port 3000, config/app.ini when present).
set -euo pipefail
cd "$(dirname "$0")/.."

as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

missing=()
for pkg in libxmlsec1-dev libclang-dev pkg-config; do
  dpkg -s "$pkg" >/dev/null 2>&1 || missing+=("$pkg")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "installing ${missing[*]}"
  as_root apt-get update -qq
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}"
fi
rustup target list --installed | grep -qx wasm32-wasip2 || rustup target add wasm32-wasip2
exec cargo run -p postern -- web "$@"
