"""Whether two results files hold the same records: the same (id, backend) keys, and for each
the same outcome, failure kind, reason and error ratio. Prints the counts of both and every
difference (at most 20), and exits 1 on any."""

import gzip
import json
import sys


def records(path: str) -> tuple[dict, dict]:
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as file:
        data = json.load(file)
    keyed = {(r["id"], r["backend"]): r for r in data["records"]}
    return data["counts"], keyed


def fields(record: dict) -> tuple:
    metrics = record.get("metrics") or {}
    return (record["outcome"], record.get("kind"), record.get("reason"), metrics.get("err_ratio"))


def main(old: str, new: str) -> int:
    (old_counts, a), (new_counts, b) = records(old), records(new)
    print(f"{old}: {len(a)} records, {old_counts}")
    print(f"{new}: {len(b)} records, {new_counts}")
    differences = [f"only in {old}: {key}" for key in sorted(a.keys() - b.keys())]
    differences += [f"only in {new}: {key}" for key in sorted(b.keys() - a.keys())]
    differences += [
        f"{key}: {fields(a[key])} -> {fields(b[key])}"
        for key in sorted(a.keys() & b.keys())
        if fields(a[key]) != fields(b[key])
    ]
    for line in differences[:20]:
        print(line)
    same = "the same" if old_counts == new_counts else "different"
    compared = "(id, backend, outcome, kind, reason, err_ratio)"
    print(f"{len(differences)} differences in {compared}; counts {same}")
    return 1 if differences or old_counts != new_counts else 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
