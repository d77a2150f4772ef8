#!/usr/bin/env bash
# venv.sh NAME PACKAGE VERSION: PyPI's PACKAGE at VERSION in a virtual
# environment of its own, ${XDG_CACHE_HOME:-~/.cache}/postern/NAME; does
# nothing when that version is already there. Installs Debian's python3-venv
# when Python cannot make one.
set -euo pipefail

as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

name="$1" package="$2" version="$3"
venv="${XDG_CACHE_HOME:-$HOME/.cache}/postern/$name"
if "$venv/bin/python" -c "import importlib.metadata as m, sys; sys.exit(m.version('$package') != '$version')" 2>/dev/null; then
  exit 0
fi
if ! python3 -c 'import venv, ensurepip' 2>/dev/null; then
  as_root apt-get update -qq
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3 python3-venv
fi
rm -rf "$venv"
python3 -m venv "$venv"
"$venv/bin/pip" install -q "$package==$version"
