"""``ferromx.profiler``: MXNet's profiler interface over the engine's events.

Every engine operation is recorded on the worker thread that ran it (name,
device, duration, input shapes), and every frontend wait on the thread that
blocked, carrying what it waited for, the blocking call (``asnumpy``,
``item``, ``print``...) and the ``file:line`` of the user's code. ``dump()``
writes a Chrome trace (chrome://tracing, Perfetto); ``dumps()`` an aggregate
table per operator and per wait site; ``timeline()`` draws the trace as SVG.
"""

import json
import os
import tempfile
from contextlib import contextmanager

from . import _native

__all__ = ["set_config", "set_state", "state", "pause", "resume", "dump", "dumps", "Profile",
           "timeline", "events", "wait_summary"]

_config = {
    "filename": "profile.json",
    "profile_all": False,
    "profile_imperative": True,
    "profile_memory": True,
    "profile_api": True,
    "aggregate_stats": True,
    "continuous_dump": False,
}
_state = {"state": "stop", "paused": False}


def set_config(**kwargs):
    """Sets options (``filename``, ``profile_all``, ``profile_imperative``,
    ``profile_memory``, ``profile_api``, ``aggregate_stats``, ``continuous_dump``)."""
    unknown = set(kwargs) - set(_config) - {"profile_symbolic", "profile_process", "dump_period"}
    if unknown:
        raise ValueError(f"profiler.set_config: unknown options {sorted(unknown)}")
    _config.update({k: v for k, v in kwargs.items() if k in _config})


def set_state(state="stop", profile_process="worker"):
    """Starts (``'run'``) or stops (``'stop'``) recording."""
    if state not in ("run", "stop"):
        raise ValueError(f"profiler state must be 'run' or 'stop', got {state!r}")
    if state == "run":
        _native.profiler_start()
    else:
        _native.profiler_stop()
        if _config["continuous_dump"]:
            dump()
    _state["state"] = state


def state():
    """``'run'`` or ``'stop'``."""
    return _state["state"]


def pause(profile_process="worker"):
    """Stops recording without ending the session."""
    if _state["state"] == "run":
        _native.profiler_stop()
        _state["paused"] = True


def resume(profile_process="worker"):
    """Resumes after :func:`pause`."""
    if _state["paused"]:
        _native.profiler_start()
        _state["paused"] = False


def events(reset=False):
    """The recorded events as dicts (``ph``, ``name``, ``cat``, ``thread``, ``ts``, ``dur``, ``args``)."""
    out = []
    for ph, name, cat, thread, ts, dur, args in _native.profiler_events(reset):
        out.append({"ph": ph, "name": name, "cat": cat, "thread": thread, "ts": ts, "dur": dur,
                    "args": json.loads(args) if args else {}})
    return out


def _trace(evs):
    tids = {}
    trace = []
    for e in evs:
        tid = tids.setdefault(e["thread"], len(tids) + 1)
        ev = {"name": e["name"], "cat": e["cat"], "ph": e["ph"], "ts": round(e["ts"], 3),
              "pid": 0, "tid": tid, "args": e["args"]}
        if e["ph"] == "X":
            ev["dur"] = round(e["dur"], 3)
        trace.append(ev)
    meta = [{"name": "process_name", "ph": "M", "pid": 0, "args": {"name": "ferromx"}}]
    for name, tid in tids.items():
        meta.append({"name": "thread_name", "ph": "M", "pid": 0, "tid": tid,
                     "args": {"name": name}})
        meta.append({"name": "thread_sort_index", "ph": "M", "pid": 0, "tid": tid,
                     "args": {"sort_index": (0 if name.startswith("frontend") else tid)}})
    return {"traceEvents": meta + trace, "displayTimeUnit": "ms"}


def dump(finished=True, profile_process="worker"):
    """Writes the Chrome trace JSON to the configured ``filename`` (atomically)."""
    evs = events(reset=finished)
    fname = _config["filename"]
    d = os.path.dirname(os.path.abspath(fname))
    fd, tmp = tempfile.mkstemp(dir=d, suffix=".tmp")
    with os.fdopen(fd, "w") as f:
        json.dump(_trace(evs), f)
    os.replace(tmp, fname)
    return fname


def _aggregate(evs):
    ops, waits = {}, {}
    for e in evs:
        if e["ph"] != "X":
            continue
        dur = e["dur"] / 1000.0
        if e["cat"] == "operator":
            s = ops.setdefault(e["name"], [0, 0.0, float("inf"), 0.0])
        else:
            s = waits.setdefault(e["args"].get("site", e["name"]), [0, 0.0, float("inf"), 0.0])
        s[0] += 1
        s[1] += dur
        s[2] = min(s[2], dur)
        s[3] = max(s[3], dur)
    return ops, waits


def wait_summary(evs=None):
    """``{site: (count, total_ms)}`` of frontend waits (without clearing the events)."""
    _, waits = _aggregate(events() if evs is None else evs)
    return {k: (v[0], v[1]) for k, v in waits.items()}


def dumps(reset=False, format="table", sort_by="total", ascending=False):  # noqa: A002
    """Aggregate statistics: per operator (count, total, min, max, mean ms) and per
    wait site (``file:line call``, count, total blocked ms), sorted by ``sort_by``."""
    ops, waits = _aggregate(events(reset=reset))
    keys = {"total": 1, "count": 0, "min": 2, "max": 3, "avg": 1, "mean": 1}
    if sort_by not in keys:
        raise ValueError(f"sort_by must be one of {sorted(keys)}")
    k = keys[sort_by]

    def order(d):
        return sorted(d.items(), key=lambda kv: (kv[1][k] / kv[1][0]) if sort_by in ("avg", "mean")
                      else kv[1][k], reverse=not ascending)

    if format == "json":
        return json.dumps({
            "operators": {n: {"count": c, "total_ms": t, "min_ms": mn, "max_ms": mx,
                              "mean_ms": t / c} for n, (c, t, mn, mx) in ops.items()},
            "waits": {n: {"count": c, "total_ms": t, "min_ms": mn, "max_ms": mx}
                      for n, (c, t, mn, mx) in waits.items()},
        })
    if format != "table":
        raise ValueError("format must be 'table' or 'json'")
    lines = ["Profile Statistics (times in ms)", "", "Operators:",
             f"{'Name':<32}{'Count':>10}{'Total':>12}{'Min':>10}{'Max':>10}{'Mean':>10}"]
    for n, (c, t, mn, mx) in order(ops):
        lines.append(f"{n[:31]:<32}{c:>10}{t:>12.3f}{mn:>10.3f}{mx:>10.3f}{t / c:>10.3f}")
    lines += ["", "Frontend waits (where the Python thread blocked):",
              f"{'Site':<48}{'Count':>8}{'Total':>12}{'Max':>10}"]
    for n, (c, t, mn, mx) in order(waits):
        lines.append(f"{n[:47]:<48}{c:>8}{t:>12.3f}{mx:>10.3f}")
    return "\n".join(lines)


class Profile:
    """Context manager: ``with profiler.Profile('trace.json'): ...`` records and dumps."""

    def __init__(self, filename=None, **config):
        self._cfg = dict(config)
        if filename:
            self._cfg["filename"] = filename

    def __enter__(self):
        set_config(**self._cfg)
        events(reset=True)
        set_state("run")
        return self

    def __exit__(self, *exc):
        set_state("stop")
        dump()


@contextmanager
def scope(name="<unk>:"):
    """Accepted for compatibility (MXNet's profiler scopes); no effect."""
    yield


def timeline(trace_file, out_file, width=1400, row_height=22):
    """Draws a Chrome trace as an SVG picture: one row per worker thread and one per
    frontend thread, operators as blue bars, frontend waits highlighted in red."""
    with open(trace_file) as f:
        tr = json.load(f)
    names = {e["tid"]: e["args"]["name"] for e in tr["traceEvents"]
             if e.get("ph") == "M" and e.get("name") == "thread_name"}
    evs = [e for e in tr["traceEvents"] if e.get("ph") == "X"]
    if not evs:
        raise ValueError(f"timeline: no events in {trace_file}")
    t0 = min(e["ts"] for e in evs)
    t1 = max(e["ts"] + e["dur"] for e in evs)
    span = max(t1 - t0, 1e-6)
    tids = sorted(names, key=lambda t: (0 if names[t].startswith("frontend") else 1, names[t]))
    label_w = 260
    plot_w = width - label_w - 20
    h = 40 + row_height * len(tids) + 30
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{h}" '
           f'font-family="monospace" font-size="11">',
           f'<rect width="{width}" height="{h}" fill="white"/>',
           f'<text x="10" y="20" font-size="13">ferromx timeline — {span / 1000:.2f} ms; '
           'blue: engine ops, red: frontend waits</text>']
    row = {t: i for i, t in enumerate(tids)}
    for t, i in row.items():
        y = 30 + i * row_height
        out.append(f'<text x="10" y="{y + 15}">{names[t][:36]}</text>')
        out.append(f'<rect x="{label_w}" y="{y}" width="{plot_w}" height="{row_height - 4}" '
                   'fill="#f3f3f3"/>')
    for e in evs:
        if e["tid"] not in row:
            continue
        y = 30 + row[e["tid"]] * row_height
        x = label_w + (e["ts"] - t0) / span * plot_w
        w = max(e["dur"] / span * plot_w, 0.5)
        color = "#d62728" if e.get("cat") == "wait" else "#1f77b4"
        title = f'{e["name"]} {e["dur"]:.1f} us'
        out.append(f'<rect x="{x:.2f}" y="{y}" width="{w:.2f}" height="{row_height - 4}" '
                   f'fill="{color}"><title>{_esc(title)}</title></rect>')
    for k in range(6):
        x = label_w + k * plot_w / 5
        out.append(f'<text x="{x:.0f}" y="{h - 8}">{(k * span / 5) / 1000:.1f} ms</text>')
    out.append("</svg>")
    with open(out_file, "w") as f:
        f.write("\n".join(out))
    return out_file


def _esc(s):
    return s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
