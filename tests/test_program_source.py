"""The generated programs: one source text per function, as tracebacks and dynamo quote them."""

from __future__ import annotations

import linecache

from gemmconf import api, program


def test_the_program_and_its_references_keep_their_own_source_lines():
    """Tracebacks and dynamo's graph-break messages quote the program's line: the fp64 reference
    compiled for the same item no longer replaces the program's text in linecache."""
    (item,) = api.instances(["out/targets[mm-strided]"])
    function, reference = program.make_function(item), program.make_reference(item)
    for fn in (function, reference):
        code = fn.__code__
        assert fn.__name__ in linecache.getline(code.co_filename, code.co_firstlineno)
    assert function.__code__.co_filename != reference.__code__.co_filename
