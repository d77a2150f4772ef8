#!/usr/bin/env bash
# PyPI's gitea-api-client (generated from Gitea's swagger) in a virtual
# environment of its own, for tests/tests/gitea_client.rs; does nothing when
# the pinned version is already there.
set -euo pipefail

as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

version="1.27.3"
venv="${XDG_CACHE_HOME:-$HOME/.cache}/postern/gitea-venv"
if "$venv/bin/python" -c "import importlib.metadata as m, sys; sys.exit(m.version('gitea-api-client') != '$version')" 2>/dev/null; then
  exit 0
fi
if ! python3 -c 'import venv, ensurepip' 2>/dev/null; then
  as_root apt-get update -qq
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3 python3-venv
fi
rm -rf "$venv"
python3 -m venv "$venv"
"$venv/bin/pip" install -q "gitea-api-client==$version"
