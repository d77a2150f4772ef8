#!/usr/bin/env bash
# PyPI's gitea-api-client (generated from Gitea's swagger) in a virtual
# environment of its own, for tests/tests/gitea_client.rs.
set -euo pipefail
exec bash "$(dirname "$0")/../peers/venv.sh" gitea-venv gitea-api-client 1.27.3
