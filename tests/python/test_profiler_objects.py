"""MXNet's profiler objects (Domain, Task, Frame, Event, Counter, Marker) in ferromx's trace
and aggregate tables, and ``dumps()`` keeping its statistics across ``dump()``."""

import json
import threading
import warnings

import ferromx as mx
import pytest
from ferromx import nd, profiler
from ferromx.base import MXNetError

_native = mx.nd._native


@pytest.fixture
def prof(tmp_path):
    """A clean profiler writing to a temporary file; restored afterwards."""
    mx.nd.waitall()
    saved = dict(profiler._config)
    profiler.set_state("stop")
    profiler.events(reset=True)
    profiler.set_config(filename=str(tmp_path / "trace.json"))
    yield tmp_path
    profiler.set_state("stop")
    profiler.events(reset=True)
    profiler.set_config(**saved)


def _load(fname):
    with open(fname) as f:
        return json.load(f)["traceEvents"]


def test_objects_appear_in_the_trace(prof):
    dom = profiler.Domain("train")
    task, frame = dom.new_task("step"), profiler.Frame(dom, "iter")
    counter, marker = dom.new_counter("batches", 5), dom.new_marker("epoch_end")
    t0 = _native.profiler_now_us()
    profiler.set_state("run")
    frame.start()
    task.start()
    (nd.ones((4, 4)) * 3).asnumpy()
    task.stop()
    counter += 2
    counter -= 1
    counter.increment(10)
    counter.decrement()
    marker.mark("global")
    with profiler.Event("custom"):
        pass
    frame.stop()
    profiler.set_state("stop")
    t1 = _native.profiler_now_us()
    evs = _load(profiler.dump())
    tids = {e["tid"]: e["args"]["name"] for e in evs if e["ph"] == "M" and e["name"] ==
            "thread_name"}
    (step,) = [e for e in evs if e["name"] == "step"]
    (it,) = [e for e in evs if e["name"] == "iter"]
    assert step["ph"] == "X" and step["cat"] == "train" and tids[step["tid"]].startswith(
        "frontend")
    assert t0 <= it["ts"] <= step["ts"] and step["ts"] + step["dur"] <= it["ts"] + it["dur"] <= t1
    ops = [e for e in evs if e["ph"] == "X" and e["cat"] == "operator"]
    assert any(step["ts"] <= o["ts"] <= step["ts"] + step["dur"] for o in ops)  # same clock
    values = [e["args"]["batches"] for e in evs if e["ph"] == "C" and e["name"] == "batches"]
    assert values == [7, 6, 16, 15]  # the initial 5 was set before recording started
    (mark,) = [e for e in evs if e["ph"] == "i"]
    assert mark["name"] == "epoch_end" and mark["s"] == "g"
    assert [e["cat"] for e in evs if e["name"] == "custom"] == ["event"]


def test_nothing_recorded_while_stopped_or_paused(prof):
    dom = profiler.Domain("d")
    task = dom.new_task("quiet")
    task.start()
    task.stop()
    profiler.set_state("run")
    profiler.pause()
    dom.new_marker("hidden").mark()
    profiler.resume()
    dom.new_marker("shown").mark()
    profiler.set_state("stop")
    names = {e["name"] for e in profiler.events()}
    assert "shown" in names and "quiet" not in names and "hidden" not in names


def test_dumps_keeps_aggregates_across_dump(prof):
    dom = profiler.Domain("agg")
    task = dom.new_task("unit")
    profiler.set_state("run")
    for _ in range(3):
        task.start()
        nd.ones((2, 2)).wait_to_read()
        task.stop()
    counter = dom.new_counter("n")
    counter.set_value(4)
    profiler.set_state("stop")
    profiler.dump()
    assert profiler.events() == []  # the trace events are consumed ...
    stats = json.loads(profiler.dumps(format="json"))  # ... the statistics are not
    assert stats["domains"]["agg"]["unit"]["count"] == 3
    assert stats["operators"]["_ones"]["count"] == 3  # nd.ones runs MXNet's _ones
    assert stats["counters"]["agg"]["n"] == {"count": 1, "value": 4, "min": 4, "max": 4}
    table = profiler.dumps(reset=True)
    row = next(ln for ln in table.splitlines() if ln.startswith("agg::unit"))
    assert int(row.split()[1]) == 3
    assert "Counters:" in table and "agg::n" in table
    after = json.loads(profiler.dumps(format="json"))
    assert after["domains"] == {} and after["operators"] == {}


def test_dump_finished_false_keeps_events(prof):
    profiler.set_state("run")
    profiler.Domain("k").new_marker("m").mark()
    profiler.set_state("stop")
    first = _load(profiler.dump(finished=False))
    second = _load(profiler.dump())
    assert [e["name"] for e in first if e["ph"] == "i"] == ["m"]
    assert [e["name"] for e in second if e["ph"] == "i"] == ["m"]
    assert profiler.events() == []


def test_events_from_another_thread_get_their_own_row(prof):
    dom = profiler.Domain("threads")
    profiler.set_state("run")

    def work():
        with dom.new_task("bg"):
            pass

    t = threading.Thread(target=work, name="worker-x")
    t.start()
    t.join(timeout=10)
    profiler.set_state("stop")
    (bg,) = [e for e in profiler.events() if e["name"] == "bg"]
    assert bg["thread"] == "frontend worker-x"


def test_bad_use_raises_and_deprecated_names(prof):
    dom = profiler.Domain("bad")
    with pytest.raises(MXNetError, match="stop\\(\\) without start\\(\\)"):
        dom.new_task("t").stop()
    with pytest.raises(ValueError, match="scope"):
        dom.new_marker("m").mark("universe")
    with pytest.raises(TypeError, match="Domain"):
        profiler.Task("not a domain", "t")
    with pytest.raises(TypeError, match="int"):
        dom.new_counter("c").set_value(1.5)
    with pytest.raises(ValueError):
        profiler.Domain("")
    with pytest.raises(ValueError, match="reset and ascending"):
        profiler.dumps(reset="yes")
    with pytest.raises(MXNetError, match="kvstore"):
        profiler.set_state("run", profile_process="server")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(DeprecationWarning):
            profiler.profiler_set_state("stop")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        profiler.profiler_set_config(mode="all", filename=str(prof / "old.json"))
        profiler.profiler_set_state("run")
        profiler.profiler_set_state("stop")
        assert profiler.dump_profile() == str(prof / "old.json")
    assert str(dom) == "bad" and str(dom.new_counter("c")) == "c"
