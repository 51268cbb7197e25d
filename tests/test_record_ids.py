"""Record ids are a public contract (users' expectation files and CI lines name them): every id
of a published run of an earlier suite still names an instance of today's suite."""

from __future__ import annotations

from pathlib import Path

import pytest

from gemmconf import api
from gemmconf.report.results import read

ROOT = Path(__file__).resolve().parents[1]
# Runs of the suite as it was, and the ids each had: a record id they carry must still exist.
PUBLISHED = (
    # 3,329 ids, before issue 13
    "reports/published/2026-11-22-nvidia-h200-suites-and-bench/reference.json.xz",
)
RETIRED: dict[str, str] = {}  # id -> why it no longer exists (none so far)


@pytest.fixture(scope="module")
def current_ids() -> set[str]:
    return {instance.id for instance in api.instances(suites=ROOT / "suites")}


@pytest.mark.parametrize("published", PUBLISHED)
def test_every_published_record_id_still_exists(published, current_ids):
    records = read(ROOT / published)["records"]  # kept gzip-compressed
    old = {record["id"] for record in records}
    assert len(old) > 3000
    missing = sorted(old - current_ids - set(RETIRED))
    assert not missing, f"record ids of {published} that no longer exist: {missing}"


def test_the_seed_ports_keep_their_first_ids(current_ids):
    """Completing the ports of test_non_contiguous_input_{mm,addmm,bmm} (padded strides, stride-0
    batches) added scenarios beside the first ports instead of renaming them."""
    for op in ("mm", "addmm", "bmm"):
        assert f"seed_max_autotune/non_contiguous_input_{op}" in current_ids
        assert f"seed_max_autotune/non_contiguous_input_{op}_padded[small]" in current_ids
