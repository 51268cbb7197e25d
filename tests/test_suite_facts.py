"""The whole suite's facts kept across processes (gemmconf.scenario.facts): a file read again
with the same bytes, code and limits is not expanded; a changed file, other limits, or a cache
file that is not what gemmconf wrote are misses; a file with an error is never stored; the folder
keeps its newest files; a cache that cannot be written is no error."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import warm_python
from suite_files import TINY, write_suite

from gemmconf.scenario import ScenarioError, load_suite
from gemmconf.scenario import facts as suite_facts_mod
from gemmconf.scenario.facts import Facts, suite_facts

pytest_plugins = ["pytester"]

LIMITS = (100_000, 1 << 40)


class Loads:
    """`load_suite`, counting the files it expanded."""

    def __init__(self) -> None:
        self.paths: list[Path] = []

    def __call__(self, path: Path):
        self.paths.append(path)
        return load_suite(path)


def test_a_file_read_again_is_not_expanded_and_gives_the_same_facts(tmp_path):
    path = write_suite(tmp_path, TINY, "tiny.yaml")
    cache = tmp_path / "cache"
    first, second = Loads(), Loads()
    expanded = suite_facts([path], first, limits=LIMITS, cache=cache)
    stored = suite_facts([path], second, limits=LIMITS, cache=cache)
    assert first.paths == [path] and second.paths == []
    assert stored == expanded == [Facts.of(i) for i in load_suite(path)]
    assert len(expanded) == 6 and ("dtype", "fp16") in expanded[2].axes
    assert "cpu" in expanded[0].markers  # implied markers are stored as the entry matches them


def test_a_changed_file_or_other_limits_are_misses(tmp_path):
    path = write_suite(tmp_path, TINY, "tiny.yaml")
    cache = tmp_path / "cache"
    suite_facts([path], load_suite, limits=LIMITS, cache=cache)
    path.write_text(TINY.replace("fp16]", "bf16]"))
    loads = Loads()
    changed = suite_facts([path], loads, limits=LIMITS, cache=cache)
    assert loads.paths == [path]
    assert ("dtype", "bf16") in changed[2].axes
    suite_facts([path], loads, limits=(10, 1 << 40), cache=cache)
    assert loads.paths == [path, path]


def test_a_file_with_an_error_is_never_stored(tmp_path):
    path = write_suite(tmp_path, TINY.replace("op: addmm", "op: addmmm"), "tiny.yaml")
    cache = tmp_path / "cache"
    for _ in range(2):
        with pytest.raises(ScenarioError, match="addmmm"):
            suite_facts([path], load_suite, limits=LIMITS, cache=cache)
    assert not list(cache.glob("*.json"))


@pytest.mark.parametrize(
    "stored",
    [
        "not json",
        json.dumps({"format": "gemmconf-suite-facts", "version": 99, "facts": []}),
        json.dumps({"format": "gemmconf-suite-facts", "version": 1, "facts": [["x", 1]]}),
        json.dumps({"format": "gemmconf-suite-facts", "version": 1, "facts": {"a": 1}}),
        json.dumps([1, 2, 3]),
    ],
)
def test_a_cache_file_gemmconf_did_not_write_is_a_miss_and_is_written_again(tmp_path, stored):
    path = write_suite(tmp_path, TINY, "tiny.yaml")
    cache = tmp_path / "cache"
    suite_facts([path], load_suite, limits=LIMITS, cache=cache)
    (file,) = cache.glob("*.json")
    file.write_text(stored)
    loads = Loads()
    assert len(suite_facts([path], loads, limits=LIMITS, cache=cache)) == 6
    assert loads.paths == [path]
    assert json.loads(file.read_text())["version"] == 1  # written again


def test_an_oversized_cache_file_is_not_read(tmp_path, monkeypatch):
    path = write_suite(tmp_path, TINY, "tiny.yaml")
    cache = tmp_path / "cache"
    suite_facts([path], load_suite, limits=LIMITS, cache=cache)
    monkeypatch.setattr(suite_facts_mod, "MAX_CACHE_BYTES", 10)
    loads = Loads()
    suite_facts([path], loads, limits=LIMITS, cache=cache)
    assert loads.paths == [path]


def test_the_folder_keeps_its_newest_files(tmp_path, monkeypatch):
    monkeypatch.setattr(suite_facts_mod, "KEPT_ENTRIES", 3)
    cache = tmp_path / "cache"
    paths = [write_suite(tmp_path, TINY.replace("tiny", f"tiny{n}"), f"t{n}.yaml") for n in "abcde"]
    for path in paths:
        suite_facts([path], load_suite, limits=LIMITS, cache=cache)
    kept = [suite_facts_mod._entry(cache, path, LIMITS).exists() for path in paths]
    assert kept == [False, False, True, True, True]  # the two oldest went


def test_an_unwritable_cache_is_no_error(tmp_path):
    path = write_suite(tmp_path, TINY, "tiny.yaml")
    blocked = tmp_path / "a-file"
    blocked.write_text("")  # the cache folder's parent is a file: nothing can be made under it
    loads = Loads()
    for _ in range(2):
        assert len(suite_facts([path], loads, limits=LIMITS, cache=blocked / "cache")) == 6
    assert loads.paths == [path, path]
    assert suite_facts([path], load_suite, limits=LIMITS, cache=None) == suite_facts(
        [path], load_suite, limits=LIMITS, cache=blocked / "cache"
    )


def test_the_key_follows_gemmconfs_own_code(tmp_path, monkeypatch):
    path = write_suite(tmp_path, TINY, "tiny.yaml")
    cache = tmp_path / "cache"
    suite_facts([path], load_suite, limits=LIMITS, cache=cache)
    monkeypatch.setattr(suite_facts_mod, "_fingerprint", lambda: "another gemmconf")
    loads = Loads()
    suite_facts([path], loads, limits=LIMITS, cache=cache)
    assert loads.paths == [path]


def test_a_run_validates_expectations_from_the_stored_facts(make_suite, monkeypatch, tmp_path):
    """A second run in a fresh process reads the stored facts: a stale expectation entry is
    still an error naming its file and line, and a valid one still marks its item."""
    monkeypatch.setenv("GEMMCONF_CACHE", str(tmp_path / "gemmconf-cache"))
    entries = (
        "backend: eager\nexpectations:\n  - {match: 'tiny/mm[fp16-*]', status: skip, reason: r}\n"
    )
    suite = make_suite(expectations={"eager": entries})
    run = ("--backend", "eager", "-p", "no:xdist", "-k", "not mm_sm90")  # the same on a GPU
    for _ in range(2):
        result = warm_python.runpytest(suite, *run)
        result.assert_outcomes(passed=3, skipped=2)
    assert len(list((tmp_path / "gemmconf-cache" / "suite-facts").glob("*.json"))) == 1
    stale = entries + "  - {match: 'tiny/nothing[*]', status: skip, reason: r}\n"
    make_suite(expectations={"eager": stale})
    result = warm_python.runpytest(suite, *run)
    assert result.ret == 4
    result.stderr.fnmatch_lines(["*expectations/eager.yaml:4*matches no scenario instance*"])
