#!/usr/bin/env bash
# PyPI's pysaml2, the SAML tests' second identity provider
# (tests/peers/pysaml2/idp.py, tests/src/pysaml2.rs), in a virtual
# environment of its own. It signs and encrypts with Debian's xmlsec1
# (tests/run.sh installs it).
set -euo pipefail
exec bash "$(dirname "$0")/../venv.sh" pysaml2-venv pysaml2 7.5.5
