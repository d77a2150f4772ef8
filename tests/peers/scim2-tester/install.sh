#!/usr/bin/env bash
# PyPI's scim2-tester (RFC 7643/7644 compliance checks) in a virtual
# environment of its own, for tests/tests/scim.rs, with httpx2, the HTTP
# engine its client speaks through.
set -euo pipefail
bash "$(dirname "$0")/../venv.sh" scim2-tester-venv scim2-tester 0.5.2
venv="${XDG_CACHE_HOME:-$HOME/.cache}/postern/scim2-tester-venv"
"$venv/bin/python" -c "import importlib.metadata as m, sys; sys.exit(m.version('httpx2') != '2.16.2')" 2>/dev/null \
  || "$venv/bin/pip" install -q "httpx2==2.16.2"
