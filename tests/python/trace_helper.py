"""``trace_names``: the op names of a profiler trace of one piece of code (the tests of
bulk execution read which engine ops ran)."""

import json

import ferromx as mx


def trace_names(tmp_path, fn):
    """Runs ``fn`` under the profiler, waits for its work, and returns the names of the
    trace's duration events in order."""
    fname = str(tmp_path / "trace.json")
    mx.profiler.set_config(filename=fname, profile_all=True)
    mx.profiler.set_state("run")
    try:
        fn()
        mx.nd.waitall()
    finally:
        mx.profiler.set_state("stop")
    mx.profiler.dump()
    with open(fname) as f:
        return [e.get("name", "") for e in json.load(f)["traceEvents"] if e.get("ph") in ("B", "X")]
