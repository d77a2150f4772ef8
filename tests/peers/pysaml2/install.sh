#!/usr/bin/env bash
# PyPI's pysaml2, the SAML tests' second identity provider
# (tests/peers/pysaml2/idp.py, tests/src/pysaml2.rs), in a virtual
# environment of its own; does nothing when the pinned version is already
# there. It signs and encrypts with Debian's xmlsec1 (tests/run.sh installs
# it).
set -euo pipefail

as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

version="7.5.5"
venv="${XDG_CACHE_HOME:-$HOME/.cache}/postern/pysaml2-venv"
if "$venv/bin/python" -c "import importlib.metadata as m, sys; sys.exit(m.version('pysaml2') != '$version')" 2>/dev/null; then
  exit 0
fi
if ! python3 -c 'import venv, ensurepip' 2>/dev/null; then
  as_root apt-get update -qq
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3 python3-venv
fi
rm -rf "$venv"
python3 -m venv "$venv"
"$venv/bin/pip" install -q "pysaml2==$version"
