"""Runs scim2-tester's compliance checks against POSTERN_SCIM_URL with the
bearer token POSTERN_SCIM_TOKEN and prints one JSON line per check; exits 1
when a check reports an error. Checks named in POSTERN_SCIM_SKIP (titles,
one per line) are left out, each with the reason docs/scim.md gives."""

import json
import os
import sys

import httpx2
from scim2_client.engines.httpx2 import SyncSCIMClient
from scim2_tester import Status, check_server

url = os.environ["POSTERN_SCIM_URL"]
token = os.environ["POSTERN_SCIM_TOKEN"]
skip = {line.strip() for line in os.environ.get("POSTERN_SCIM_SKIP", "").splitlines() if line.strip()}

http = httpx2.Client(base_url=url, headers={"Authorization": f"Bearer {token}"})
client = SyncSCIMClient(http)
results = check_server(client, raise_exceptions=False)

failed = 0
for r in results:
    bad = r.status in (Status.ERROR, Status.CRITICAL) and r.title not in skip
    failed += bad
    print(json.dumps({
        "status": r.status.name,
        "title": r.title,
        "reason": r.reason,
        "resource_type": r.resource_type,
        "data": None if not bad else repr(r.data)[:2000],
    }))
print(json.dumps({"checks": len(results), "failed": failed}))
sys.exit(1 if failed else 0)
