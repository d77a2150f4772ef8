#!/usr/bin/env bash
# npm's renovate, the Gitea-ecosystem client of tests/tests/renovate.rs,
# installed once per lock file outside the checkout (it is 400 MB): into
# ~/.cache/postern/renovate, again only when package-lock.json changes.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
dest="$HOME/.cache/postern/renovate"
mkdir -p "$dest"
if ! cmp -s "$here/package-lock.json" "$dest/package-lock.json" || [ ! -x "$dest/node_modules/.bin/renovate" ]; then
  echo "installing renovate into $dest"
  cp "$here/package.json" "$here/package-lock.json" "$dest/"
  (cd "$dest" && npm ci --no-audit --no-fund --loglevel=error)
fi
