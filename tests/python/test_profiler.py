"""The profiler: the seed's training loop traced as a Chrome trace, with engine operators on
the worker threads and the frontend's waits carrying the user's ``file:line``; aggregate
tables, pause/resume, the ``Profile`` context manager and the SVG timeline."""

import inspect
import json
import os
import xml.etree.ElementTree as ET

import ferromx as mx
import numpy as np
import pytest
from ferromx import autograd, gluon, nd, profiler

_native = mx.nd._native
HERE = os.path.basename(__file__)
WORKER_PREFIX = "ferromx-cpu(0)-w"


@pytest.fixture
def prof(tmp_path):
    """A clean profiler; stops it and restores its output file afterwards."""
    mx.nd.waitall()
    saved = dict(profiler._config)
    profiler.set_state("stop")
    profiler.events(reset=True)
    profiler.set_config(filename=str(tmp_path / "trace.json"))
    yield tmp_path
    profiler.set_state("stop")
    profiler.resume()
    profiler.set_state("stop")
    profiler.events(reset=True)
    profiler.set_config(**saved)


def _seed_loop(epochs=1):
    """The seed's loop (asnumpy every step); returns (steps, 'file:line asnumpy' site)."""
    mx.random.seed(0)
    np.random.seed(0)
    data = nd.random.uniform(shape=(1024, 100))
    label = nd.array(np.random.randint(0, 10, (1024,)), dtype="int32")
    net = gluon.nn.Dense(10)
    net.initialize()
    ce = gluon.loss.SoftmaxCELoss()
    loader = gluon.data.DataLoader(
        gluon.data.ArrayDataset(data, label), batch_size=128, shuffle=True
    )
    trainer = gluon.Trainer(net.collect_params(), optimizer="sgd")
    mx.nd.waitall()
    steps, losses = 0, []
    for _ in range(epochs):
        for x, y in loader:
            with autograd.record():
                loss = ce(net(x), y)
            loss.backward()
            trainer.step(x.shape[0])
            line = inspect.currentframe().f_lineno + 1
            losses.append(np.mean(loss.asnumpy()))
            steps += 1
    assert np.isfinite(losses).all()
    return steps, f"{HERE}:{line} asnumpy"


@pytest.fixture
def traced(prof):
    """Runs the seed's loop under the profiler and dumps the trace."""
    t_first = _native.profiler_now_us()
    profiler.set_state("run")
    assert profiler.state() == "run"
    steps, site = _seed_loop()
    mx.nd.waitall()
    profiler.set_state("stop")
    t_last = _native.profiler_now_us()
    evs = profiler.events()
    table = profiler.dumps()
    stats = json.loads(profiler.dumps(format="json"))
    fname = profiler.dump()
    assert fname == str(prof / "trace.json")
    with open(fname) as f:
        trace = json.load(f)
    return {
        "steps": steps,
        "site": site,
        "evs": evs,
        "table": table,
        "stats": stats,
        "trace": trace,
        "file": fname,
        "t_first": t_first,
        "t_last": t_last,
        "dir": prof,
    }


def _names(trace):
    return {
        e["tid"]: e["args"]["name"]
        for e in trace["traceEvents"]
        if e["ph"] == "M" and e["name"] == "thread_name"
    }


def _complete(trace, cat=None):
    return [e for e in trace["traceEvents"] if e["ph"] == "X" and (cat is None or e["cat"] == cat)]


def test_trace_is_a_valid_chrome_trace(traced):
    tr = traced["trace"]
    assert isinstance(tr["traceEvents"], list) and tr["traceEvents"]
    names = _names(tr)
    assert names, "no thread_name metadata"
    assert any(n.startswith(WORKER_PREFIX) for n in names.values())
    assert any(n.startswith("frontend") for n in names.values())
    xs = _complete(tr)
    assert xs
    for e in xs:
        assert {"name", "cat", "ph", "ts", "dur", "pid", "tid"} <= set(e), e
        assert isinstance(e["ts"], (int, float)) and isinstance(e["dur"], (int, float))
        assert e["dur"] >= 0 and e["tid"] in names
    assert all(e["ph"] in ("X", "M", "C") for e in tr["traceEvents"])
    assert profiler.events() == []  # dump() consumed the events


def test_operators_run_on_worker_threads(traced):
    tr = traced["trace"]
    names = _names(tr)
    ops = _complete(tr, "operator")
    by_name = {}
    for e in ops:
        assert names[e["tid"]].startswith(WORKER_PREFIX), names[e["tid"]]
        by_name[e["name"]] = by_name.get(e["name"], 0) + 1
    steps = traced["steps"]
    assert steps == 8
    assert by_name.get("FullyConnected") == steps
    assert by_name.get("softmax_ce_loss") == steps
    assert by_name.get("sgd_update") == 2 * steps  # weight and bias
    fc = next(e for e in ops if e["name"] == "FullyConnected")
    assert "float32(128, 100)" in fc["args"]["detail"]


def test_waits_carry_the_user_line(traced):
    tr = traced["trace"]
    names = _names(tr)
    waits = [e for e in _complete(tr, "wait") if "asnumpy" in e["args"]["site"]]
    assert len(waits) == traced["steps"]
    for w in waits:
        assert w["args"]["site"] == traced["site"]
        assert names[w["tid"]].startswith("frontend")
        assert w["name"] == "wait " + traced["site"]
        assert w["args"]["waited_for"].startswith("array var")
    # nothing waited from inside ferromx is blamed on ferromx's own files
    for e in _complete(tr, "wait"):
        assert e["args"]["site"].startswith(HERE + ":"), e["args"]["site"]


def test_dumps_table_and_json(traced):
    table, stats, evs = traced["table"], traced["stats"], traced["evs"]
    counts = {}
    for e in evs:
        if e["ph"] == "X" and e["cat"] == "operator":
            counts[e["name"]] = counts.get(e["name"], 0) + 1
    rows = {ln.split()[0]: ln.split() for ln in table.splitlines() if ln.strip()}
    for op in ("FullyConnected", "softmax_ce_loss", "sgd_update"):
        assert op in rows, table
        assert int(rows[op][1]) == counts[op]
        assert stats["operators"][op]["count"] == counts[op]
        s = stats["operators"][op]
        assert 0 <= s["min_ms"] <= s["mean_ms"] <= s["max_ms"] <= s["total_ms"] + 1e-9
    site = traced["site"]
    site_line = next(ln for ln in table.splitlines() if ln.startswith(site))
    assert int(site_line[len(site) :].split()[0]) == traced["steps"]
    assert stats["waits"][site]["count"] == traced["steps"]
    assert profiler.wait_summary(evs)[site][0] == traced["steps"]
    assert table.index("Operators:") < table.index("Frontend waits")
    with pytest.raises(ValueError):
        profiler.dumps(format="xml")
    with pytest.raises(ValueError):
        profiler.dumps(sort_by="name")


def test_clock_alignment_of_the_training_trace(traced):
    t0, t1 = traced["t_first"], traced["t_last"]
    xs = [e for e in traced["evs"] if e["ph"] == "X"]
    for e in xs:
        assert t0 <= e["ts"] and e["ts"] + e["dur"] <= t1, (e, t0, t1)
    # each asnumpy wait ends after a copy-to-host op that ran for it
    copies = [e for e in xs if e["name"] == "copy_to_host"]
    for w in (e for e in xs if e["cat"] == "wait" and "asnumpy" in e["name"]):
        end = w["ts"] + w["dur"]
        assert any(c["ts"] + c["dur"] <= end + 1.0 for c in copies)


@pytest.mark.skipif(mx.engine.is_naive(), reason="NaiveEngine runs ops synchronously")
def test_a_wait_overlaps_the_op_it_blocks_on(prof):
    a = nd.ones((3,))
    a.wait_to_read()
    profiler.set_state("run")
    _native._sleep_op(a, 150)
    line = inspect.currentframe().f_lineno + 1
    a.asnumpy()
    profiler.set_state("stop")
    evs = profiler.events(reset=True)
    (sleep,) = [e for e in evs if e["name"] == "_test_sleep"]
    (wait,) = [e for e in evs if e["cat"] == "wait"]
    assert wait["args"]["site"] == f"{HERE}:{line} asnumpy"
    assert sleep["thread"].startswith(WORKER_PREFIX)
    assert sleep["dur"] >= 140_000
    s0, s1 = sleep["ts"], sleep["ts"] + sleep["dur"]
    w0, w1 = wait["ts"], wait["ts"] + wait["dur"]
    assert w0 < s1 and s0 < w1, "the wait and the op it blocked on do not overlap"
    assert w1 >= s1  # it cannot end before the op it waits for
    assert w0 <= s0 + 50_000  # it started while the op was just beginning
    assert wait["dur"] >= 100_000


def test_pause_and_resume(prof):
    a = nd.ones((3, 4))
    a.wait_to_read()
    profiler.set_state("run")
    nd.tile(a, reps=(2, 1)).wait_to_read()
    profiler.pause()
    nd.flip(a, axis=0).wait_to_read()
    mx.nd.waitall()
    profiler.resume()
    nd.repeat(a, repeats=2, axis=0).wait_to_read()
    profiler.set_state("stop")
    nd.transpose(a).wait_to_read()  # after stop: not recorded
    names = {e["name"] for e in profiler.events(reset=True)}
    assert "tile" in names and "repeat" in names
    assert "flip" not in names and "transpose" not in names
    assert not any(n.startswith("wait") and "waitall" in n for n in names)


def test_profile_context_manager(prof):
    out = prof / "ctx.json"
    a = nd.ones((2, 2))
    with profiler.Profile(str(out)):
        assert profiler.state() == "run"
        line = inspect.currentframe().f_lineno + 1
        (nd.dot(a, a) * 2).asnumpy()
    assert profiler.state() == "stop"
    with open(out) as f:
        tr = json.load(f)
    xs = _complete(tr)
    assert any(e["name"] == "dot" for e in xs)
    assert any(e["args"].get("site") == f"{HERE}:{line} asnumpy" for e in xs)


def test_timeline_svg(traced):
    svg = traced["dir"] / "timeline.svg"
    assert profiler.timeline(traced["file"], str(svg)) == str(svg)
    text = svg.read_text(encoding=None)
    root = ET.fromstring(text.encode())  # well-formed XML
    assert root.tag.endswith("svg")
    rects = [r for r in root.iter() if r.tag.endswith("rect")]
    fills = [r.get("fill") for r in rects]
    n_ops = len(_complete(traced["trace"], "operator"))
    n_waits = len(_complete(traced["trace"], "wait"))
    assert fills.count("#d62728") == n_waits > 0
    assert fills.count("#1f77b4") == n_ops > 0
    titles = [t.text for t in root.iter() if t.tag.endswith("title")]
    assert any(t.startswith("FullyConnected") for t in titles)
    assert any(traced["site"] in t for t in titles)
    for r in rects:
        assert float(r.get("x", 0)) >= 0 and float(r.get("width")) > 0


def test_timeline_rejects_an_empty_trace(prof):
    profiler.set_state("run")
    profiler.set_state("stop")
    fname = profiler.dump()
    with pytest.raises(ValueError):
        profiler.timeline(fname, str(prof / "empty.svg"))


def test_set_state_and_config_validation(prof):
    with pytest.raises(ValueError):
        profiler.set_state("running")
    with pytest.raises(ValueError):
        profiler.set_config(no_such_option=True)
    profiler.set_config(profile_all=True, aggregate_stats=True)
    assert profiler.state() == "stop"
