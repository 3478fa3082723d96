#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-or-later
# The journal catalog and the daemon agree: every MESSAGE_ID the daemon
# defines (daemon/np-log.h) has exactly one well-formed entry in
# systemd/numaplaced.catalog, the catalog has no entry the daemon never
# sends, and every @FIELD@ an entry uses is a field that message carries
# (the field lists below are the ones numaplaced(8) documents).
#
# Usage: check-catalog.py SOURCE_ROOT
import re
import sys

root = sys.argv[1]
header = open(root + "/daemon/np-log.h").read()
ids = dict(re.findall(r'#define (NP_MESSAGE_\w+) "([0-9a-f]{32})"', header))

# the fields each message carries (its Subject and text may use them)
FIELDS = {
    "NP_MESSAGE_PLACED": {"PID", "COMM", "FROM", "TO", "BYTES", "USEC", "CPU_USEC", "REASON"},
    "NP_MESSAGE_MIGRATION_FAILED": {"PID", "FROM", "TO", "ERRNO"},
    "NP_MESSAGE_CONFIG_REJECTED": {"CONFIG_FILE"},
    "NP_MESSAGE_RELEASED": {"PID", "COMM", "FROM"},
    "NP_MESSAGE_RECOVERED": {"STATE_FILE", "PROCESSES"},
    "NP_MESSAGE_PLACE_FAILED": {"PID", "COMM", "TO"},
}

errors = []
if set(ids) != set(FIELDS):
    errors.append("np-log.h defines %s, this check knows %s" % (sorted(ids), sorted(FIELDS)))

entries = {}
cur = None
for n, line in enumerate(open(root + "/systemd/numaplaced.catalog"), 1):
    line = line.rstrip("\n")
    m = re.match(r"^-- ([0-9a-f]{32})$", line)
    if m:
        cur = m.group(1)
        if cur in entries:
            errors.append("line %d: a second entry for %s" % (n, cur))
        entries[cur] = {"line": n, "headers": {}, "body": []}
        continue
    if cur is None:
        if line and not line.startswith("#"):
            errors.append("line %d: text before the first entry" % n)
        continue
    e = entries[cur]
    if not e["body"] and re.match(r"^[A-Z][A-Za-z-]+: ", line):
        k, v = line.split(": ", 1)
        e["headers"][k] = v
    elif line or e["body"]:
        e["body"].append(line)

by_id = {v: k for k, v in ids.items()}
for mid, e in entries.items():
    name = by_id.get(mid)
    if not name:
        errors.append("line %d: %s is not a MESSAGE_ID of the daemon" % (e["line"], mid))
        continue
    for h in ("Subject", "Defined-By", "Documentation"):
        if h not in e["headers"]:
            errors.append("%s (%s): no %s: header" % (mid, name, h))
    if e["headers"].get("Defined-By") != "numaplaced":
        errors.append("%s: Defined-By is not numaplaced" % mid)
    if not any(l.strip() for l in e["body"]):
        errors.append("%s (%s): no explanation" % (mid, name))
    text = "\n".join([e["headers"].get("Subject", "")] + e["body"])
    for f in re.findall(r"@([A-Z_]+)@", text):
        if f not in FIELDS.get(name, ()):
            errors.append("%s (%s) uses @%s@, a field that message does not carry" % (mid, name, f))
for name, mid in ids.items():
    if mid not in entries:
        errors.append("%s (%s) has no catalog entry" % (name, mid))

for e in errors:
    print("check-catalog: " + e, file=sys.stderr)
print("check-catalog: %d entries, %d message ids, %d problems" % (len(entries), len(ids), len(errors)))
sys.exit(1 if errors else 0)
