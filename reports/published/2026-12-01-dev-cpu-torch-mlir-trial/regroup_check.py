"""How many failure groups each results file gives with gemmconf's signature rules as they are,
and with two changes: the address rule bounded by word boundaries, and MLIR shaped types
(memref<...>, tensor<...>, vector<...>) reduced to their kind."""
import json
import re
import sys

import gemmconf.report.groups as g

files = sys.argv[1:]
before = {f: g.group_failures(json.load(open(f))["records"]) for f in files}
rules = list(g._SIGNATURE_RULES)
rules[0] = (re.compile(r"\b0x[0-9a-fA-F]+\b"), "#")
rules.insert(0, (re.compile(r"\b(memref|tensor|vector)<[^<>]*>"), r"\1<…>"))
g._SIGNATURE_RULES = tuple(rules)
for f in files:
    after = g.group_failures(json.load(open(f))["records"])
    print(f"{f}: {len(before[f])} groups as shipped -> {len(after)} with the two changes")
    for grp in after:
        print(f"   {grp.size:4d} {grp.kind:12s} {(grp.printed or grp.reason)[-90:]}")
