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
import threading
import warnings
from contextlib import contextmanager

from . import _native
from .base import MXNetError, c_str, c_str_array, check_call, py_str  # noqa: F401 - as MXNet's module

__all__ = [
    "Counter",
    "Domain",
    "Event",
    "Frame",
    "Marker",
    "Profile",
    "Task",
    "dump",
    "dump_profile",
    "dumps",
    "events",
    "pause",
    "profiler_set_config",
    "profiler_set_state",
    "resume",
    "set_config",
    "set_kvstore_handle",
    "set_state",
    "state",
    "timeline",
    "wait_summary",
]

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
_lock = threading.RLock()
_pending = []  # trace events not yet written by dump()
# aggregate statistics, kept across dump() until dumps(reset=True) / events(reset=True):
# {"operator"|"wait"|"domain": {key: [count, total_ms, min_ms, max_ms]}, "counter": {key: [...]}}
_agg = {"operator": {}, "wait": {}, "domain": {}, "counter": {}, "mx_operator": {}}
_PROCESSES = ("worker", "server")


def _check_process(profile_process):
    if profile_process not in _PROCESSES:
        raise ValueError(f"profile_process must be 'worker' or 'server', got {profile_process!r}")
    if profile_process == "server":
        raise MXNetError("profile_process='server' needs a distributed kvstore server, which "
                         "ferromx does not have")


def set_config(**kwargs):
    """Sets options (``filename``, ``profile_all``, ``profile_imperative``,
    ``profile_memory``, ``profile_api``, ``aggregate_stats``, ``continuous_dump``)."""
    unknown = set(kwargs) - set(_config) - {"profile_symbolic", "profile_process", "dump_period"}
    if unknown:
        raise ValueError(f"profiler.set_config: unknown options {sorted(unknown)}")
    _config.update({k: v for k, v in kwargs.items() if k in _config})


def profiler_set_config(mode="symbolic", filename="profile.json"):
    """Deprecated form of :func:`set_config` (``mode`` is ``'symbolic'`` or ``'all'``)."""
    warnings.warn("profiler.profiler_set_config() is deprecated. Please use "
                  "profiler.set_config() instead", DeprecationWarning, stacklevel=2)
    if mode not in ("symbolic", "all", "imperative", "api", "memory"):
        raise ValueError(f"profiler_set_config: unknown mode {mode!r}")
    set_config(filename=filename, **({"profile_all": True} if mode == "all" else {}))


def set_state(state="stop", profile_process="worker"):
    """Starts (``'run'``) or stops (``'stop'``) recording."""
    if state not in ("run", "stop"):
        raise ValueError(f"profiler state must be 'run' or 'stop', got {state!r}")
    _check_process(profile_process)
    if state == "run":
        _native.profiler_start()
    else:
        _native.profiler_stop()
        _state["paused"] = False
        if _config["continuous_dump"]:
            dump()
    _state["state"] = state


def profiler_set_state(state="stop"):
    """Deprecated form of :func:`set_state`."""
    warnings.warn("profiler.profiler_set_state() is deprecated. Please use "
                  "profiler.set_state() instead", DeprecationWarning, stacklevel=2)
    set_state(state)


def set_kvstore_handle(handle):
    """Accepted for compatibility: ferromx has no distributed kvstore to profile."""
    _state["kvstore_handle"] = handle


def state():
    """``'run'`` or ``'stop'``."""
    return _state["state"]


def _recording():
    return _state["state"] == "run" and not _state["paused"]


def pause(profile_process="worker"):
    """Stops recording without ending the session."""
    _check_process(profile_process)
    if _state["state"] == "run":
        _native.profiler_stop()
        _state["paused"] = True


def resume(profile_process="worker"):
    """Resumes after :func:`pause`."""
    _check_process(profile_process)
    if _state["paused"]:
        _native.profiler_start()
        _state["paused"] = False


def _fold(e):
    """Adds one event to the aggregate statistics."""
    if not _config["aggregate_stats"]:
        return
    if e["ph"] == "C":
        if e["thread"] == "engine":  # the engine's own load samples: trace only
            return
        for key, value in e["args"].items():
            s = _agg["counter"].setdefault((e["cat"], key), [0, value, value, value])
            s[0] += 1
            s[1] = value
            s[2] = min(s[2], value)
            s[3] = max(s[3], value)
        return
    if e["ph"] != "X" or e["cat"] == "counter":
        return
    dur = e["dur"] / 1000.0
    if e["cat"] == "operator":
        _add(_agg["operator"], e["name"], dur)
        steps = _fused_steps(e["name"])
        for step in steps:
            _add(_agg["mx_operator"], step, dur / len(steps))
    elif e["cat"] == "wait":
        _add(_agg["wait"], e["args"].get("site", e["name"]), dur)
    else:
        _add(_agg["domain"], (e["cat"], e["name"]), dur)


def _add(table, key, dur):
    s = table.setdefault(key, [0, 0.0, float("inf"), 0.0])
    s[0] += 1
    s[1] += dur
    s[2] = min(s[2], dur)
    s[3] = max(s[3], dur)


def _fused_steps(name):
    """The operator calls one engine op ran: a fused elementwise chain
    (``_fused(a,b,...)``) ran each of its calls, any other op only itself."""
    if name.startswith("_fused(") and name.endswith(")"):
        steps = [n for n in name[len("_fused("):-1].split(",") if n]
        if steps:
            return steps
    return [name]


# Python custom operators (``mx.operator``): their engine ops are named ``Custom:<op_type>``
# and ``Custom:<op_type>:backward``; MXNet reports them, and every operator run inside
# them, in its "Custom Operator" domain as ``<op_type>::pure_python`` and
# ``<op_type>::<operator>`` (``_backward_<op_type>`` for the backward).
_CUSTOM_CAT = "Custom Operator"


def _custom_prefix(name):
    if not name.startswith("Custom:"):
        return None
    rest = name[len("Custom:"):]
    if rest.endswith(":backward"):
        return "_backward_" + rest[: -len(":backward")]
    return rest


def _attribute_custom(batch):
    """Renames, in one drained batch, the custom operators' engine ops and the operators
    that ran inside them (on the same worker thread, within their span) to MXNet's
    "Custom Operator" names."""
    spans = []
    for e in batch:
        if e["ph"] == "X" and e["cat"] == "operator":
            prefix = _custom_prefix(e["name"])
            if prefix is not None:
                spans.append((e["thread"], e["ts"], e["ts"] + e["dur"], prefix, e))
    if not spans:
        return
    for e in batch:
        if e["ph"] != "X" or e["cat"] != "operator":
            continue
        own = [s for s in spans if s[4] is e]
        if own:
            e["name"], e["cat"] = f"{own[0][3]}::pure_python", _CUSTOM_CAT
            continue
        inside = [s for s in spans if s[0] == e["thread"] and s[1] <= e["ts"]
                  and e["ts"] + e["dur"] <= s[2]]
        if inside:
            innermost = min(inside, key=lambda s: s[2] - s[1])
            e["name"], e["cat"] = f"{innermost[3]}::{e['name']}", _CUSTOM_CAT


def _drain():
    """Moves the native (engine) events into the pending trace and the aggregate stats."""
    with _lock:
        batch = [{"ph": ph, "name": name, "cat": cat, "thread": thread, "ts": ts, "dur": dur,
                  "args": json.loads(args) if args else {}}
                 for ph, name, cat, thread, ts, dur, args in _native.profiler_events(True)]
        _attribute_custom(batch)
        for e in batch:
            _pending.append(e)
            _fold(e)


def _record(e):
    """Adds a Python-side event (task, frame, counter, marker) when recording."""
    if not _recording():
        return
    _drain()  # keep the pending list in time order with the engine's events
    with _lock:
        _pending.append(e)
        _fold(e)


def _frontend():
    return f"frontend {threading.current_thread().name}"


def _reset_agg():
    for table in _agg.values():
        table.clear()


def events(reset=False):
    """The recorded, not yet dumped events as dicts (``ph``, ``name``, ``cat``, ``thread``,
    ``ts``, ``dur``, ``args``): the engine's and the Python-side objects'. ``reset=True``
    clears them and the aggregate statistics (a fresh start)."""
    _drain()
    with _lock:
        out = list(_pending)
        if reset:
            _pending.clear()
            _reset_agg()
    return out


_MARKER_SCOPES = {"global": "g", "process": "p", "thread": "t", "task": "t", "marker": "t"}


def _trace(evs):
    tids = {}
    trace = []
    for e in evs:
        tid = tids.setdefault(e["thread"], len(tids) + 1)
        ev = {"name": e["name"], "cat": e["cat"], "ph": e["ph"], "ts": round(e["ts"], 3),
              "pid": 0, "tid": tid, "args": e["args"]}
        if e["ph"] == "X":
            ev["dur"] = round(e["dur"], 3)
        elif e["ph"] == "i":
            ev["s"] = _MARKER_SCOPES.get(e["args"].get("scope"), "p")
        trace.append(ev)
    meta = [{"name": "process_name", "ph": "M", "pid": 0, "args": {"name": "ferromx"}}]
    for name, tid in tids.items():
        meta.append({"name": "thread_name", "ph": "M", "pid": 0, "tid": tid,
                     "args": {"name": name}})
        meta.append({"name": "thread_sort_index", "ph": "M", "pid": 0, "tid": tid,
                     "args": {"sort_index": (0 if name.startswith("frontend") else tid)}})
    return {"traceEvents": meta + trace, "displayTimeUnit": "ms"}


def dump(finished=True, profile_process="worker"):
    """Writes the Chrome trace JSON of the pending events to the configured ``filename``
    (atomically). ``finished=True`` consumes the events (the next dump starts after them);
    the aggregate statistics :func:`dumps` reports are kept either way."""
    _check_process(profile_process)
    _drain()
    with _lock:
        evs = list(_pending)
        if finished:
            _pending.clear()
    fname = _config["filename"]
    d = os.path.dirname(os.path.abspath(fname))
    fd, tmp = tempfile.mkstemp(dir=d, suffix=".tmp")
    with os.fdopen(fd, "w") as f:
        json.dump(_trace(evs), f)
    os.replace(tmp, fname)
    return fname


def dump_profile():
    """Deprecated form of ``dump(True)``."""
    warnings.warn("profiler.dump_profile() is deprecated. Please use profiler.dump() instead",
                  DeprecationWarning, stacklevel=2)
    return dump(True)


def _aggregate(evs):
    ops, waits = {}, {}
    for e in evs:
        if e["ph"] != "X" or e["cat"] not in ("operator", "wait"):
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


_SORT_KEYS = {"total": 1, "count": 0, "min": 2, "max": 3, "avg": 1, "mean": 1}


def _mx_row(c, t, mn, mx):
    return {"Count": c, "Total": t, "Min": mn, "Max": mx, "Avg": t / c}


def _stats_json(ops, waits, domains, counters, order=None, mx_ops=None):
    def row(c, t, mn, mx):
        return {"count": c, "total_ms": t, "min_ms": mn, "max_ms": mx, "mean_ms": t / c}

    dom = {}
    for (d, n), v in domains.items():
        dom.setdefault(d, {})[n] = row(*v)
    cnt = {}
    for (d, n), (c, last, mn, mx) in counters.items():
        cnt.setdefault(d, {})[n] = {"count": c, "value": last, "min": mn, "max": mx}
    return json.dumps({
        "operators": {n: row(*v) for n, v in ops.items()},
        "waits": {n: {k: x for k, x in row(*v).items() if k != "mean_ms"}
                  for n, v in waits.items()},
        "domains": dom,
        "counters": cnt,
        # MXNet's layout (sorted by ``sort_by``): Time per domain, Memory (ferromx keeps no
        # memory statistics, so it is empty) and the units.
        "Time": _mx_time(ops if mx_ops is None else mx_ops, domains,
                         order or (lambda d: list(d.items()))),
        "Memory": {},
        "Unit": {"Time": "ms", "Memory": "kB"},
    })


def _mx_time(ops, domains, order):
    time = {"operator": {n: _mx_row(*v) for n, v in order(ops)}} if ops else {}
    by_domain = {}
    for (d, n), v in domains.items():
        by_domain.setdefault(d, {})[n] = v
    for d, rows in by_domain.items():
        time[d] = {n: _mx_row(*v) for n, v in order(rows)}
    return time


def dumps(reset=False, format="table", sort_by="total", ascending=False):
    """Aggregate statistics since the last reset (they survive :func:`dump`): per operator
    (count, total, min, max, mean ms), per wait site (``file:line call``), per profiler
    domain task/frame/event, and counters; rows sorted by ``sort_by``
    (``'total'``, ``'avg'``, ``'min'``, ``'max'``, ``'count'``)."""
    if format not in ("table", "json"):
        raise ValueError("format must be 'table' or 'json'")
    if sort_by not in _SORT_KEYS:
        raise ValueError(f"sort_by must be one of {sorted(_SORT_KEYS)}")
    if not isinstance(reset, bool) or not isinstance(ascending, bool):
        raise ValueError("reset and ascending must be True or False")  # noqa: TRY004 - MXNet
    _drain()
    with _lock:
        ops, waits = dict(_agg["operator"]), dict(_agg["wait"])
        domains, counters = dict(_agg["domain"]), dict(_agg["counter"])
        mx_ops = dict(_agg["mx_operator"])
        if reset:
            _reset_agg()
    k = _SORT_KEYS[sort_by]

    def order(d):
        return sorted(d.items(), key=lambda kv: (kv[1][k] / kv[1][0]) if sort_by in ("avg", "mean")
                      else kv[1][k], reverse=not ascending)

    if format == "json":
        return _stats_json(ops, waits, domains, counters, order, mx_ops)
    lines = ["Profile Statistics (times in ms)", "", "Operators:",
             f"{'Name':<32}{'Count':>10}{'Total':>12}{'Min':>10}{'Max':>10}{'Mean':>10}"]
    for n, (c, t, mn, mx) in order(ops):
        lines.append(f"{n[:31]:<32}{c:>10}{t:>12.3f}{mn:>10.3f}{mx:>10.3f}{t / c:>10.3f}")
    lines += ["", "Frontend waits (where the Python thread blocked):",
              f"{'Site':<48}{'Count':>8}{'Total':>12}{'Max':>10}"]
    for n, (c, t, mn, mx) in order(waits):
        lines.append(f"{n[:47]:<48}{c:>8}{t:>12.3f}{mx:>10.3f}")
    if domains:
        lines += ["", "Domains (tasks, frames, events):",
                  f"{'Domain::Name':<40}{'Count':>8}{'Total':>12}{'Min':>10}{'Max':>10}"]
        for (d, n), (c, t, mn, mx) in order(domains):
            lines.append(f"{(d + '::' + n)[:39]:<40}{c:>8}{t:>12.3f}{mn:>10.3f}{mx:>10.3f}")
    if counters:
        lines += ["", "Counters:",
                  f"{'Domain::Name':<40}{'Count':>8}{'Value':>12}{'Min':>10}{'Max':>10}"]
        for (d, n), (c, last, mn, mx) in sorted(counters.items()):
            lines.append(f"{(d + '::' + n)[:39]:<40}{c:>8}{last:>12}{mn:>10}{mx:>10}")
    return "\n".join(lines)


class Domain:
    """A profiling domain grouping tasks, frames, counters and markers (the trace category)."""

    def __init__(self, name):
        if not isinstance(name, str) or not name:
            raise ValueError(f"Domain name must be a non-empty str, got {name!r}")
        self.name = name

    def __str__(self):
        return self.name

    def new_task(self, name):
        """A :class:`Task` of this domain."""
        return Task(self, name)

    def new_frame(self, name):
        """A :class:`Frame` of this domain."""
        return Frame(self, name)

    def new_counter(self, name, value=None):
        """A :class:`Counter` of this domain (set to ``value`` if given)."""
        return Counter(self, name, value)

    def new_marker(self, name):
        """A :class:`Marker` of this domain."""
        return Marker(self, name)


def _check_domain(domain):
    if not isinstance(domain, Domain):
        raise TypeError(f"expected a profiler.Domain, got {type(domain).__name__}")
    return domain


class _Span:
    """A named duration: ``start()`` ... ``stop()`` becomes one complete ('X') trace event
    (and a row of the aggregate table) when the profiler is recording at ``stop()``."""

    _kind = "span"

    def __init__(self, category, name):
        self.name = name
        self._cat = category
        self._start = None

    def start(self):
        """Starts timing."""
        self._start = _native.profiler_now_us()

    def stop(self):
        """Stops timing and records the span; raises ``MXNetError`` without a ``start()``."""
        if self._start is None:
            raise MXNetError(f"profiler {self._kind} {self.name!r}: stop() without start()")
        t0, self._start = self._start, None
        t1 = _native.profiler_now_us()
        _record({"ph": "X", "name": self.name, "cat": self._cat, "thread": _frontend(),
                 "ts": t0, "dur": t1 - t0, "args": {"kind": self._kind}})

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc):
        self.stop()

    def __str__(self):
        return self.name


class Task(_Span):
    """A task of a :class:`Domain`: a logical unit of work, timed by ``start()``/``stop()``."""

    _kind = "task"

    def __init__(self, domain, name):
        self.domain = _check_domain(domain)
        super().__init__(domain.name, name)


class Frame(_Span):
    """A frame of a :class:`Domain` (e.g. one training iteration), timed like a :class:`Task`."""

    _kind = "frame"

    def __init__(self, domain, name):
        self.domain = _check_domain(domain)
        super().__init__(domain.name, name)


class Event(_Span):
    """A named event without a domain, timed by ``start()``/``stop()``."""

    _kind = "event"

    def __init__(self, name):
        super().__init__("event", name)


class Counter:
    """A numeric counter of a :class:`Domain`; each change is a counter ('C') trace event."""

    def __init__(self, domain, name, value=None):
        self.domain = _check_domain(domain)
        self.name = name
        self.value = 0
        if value is not None:
            self.set_value(value)

    def _emit(self):
        _record({"ph": "C", "name": self.name, "cat": self.domain.name, "thread": _frontend(),
                 "ts": _native.profiler_now_us(), "dur": 0.0, "args": {self.name: self.value}})

    def set_value(self, value):
        """Sets the counter to the integer ``value``."""
        if isinstance(value, bool) or not isinstance(value, int):
            raise TypeError(f"Counter value must be an int, got {value!r}")
        self.value = value
        self._emit()

    def increment(self, delta=1):
        """Adds ``delta``."""
        self.set_value(self.value + delta)

    def decrement(self, delta=1):
        """Subtracts ``delta``."""
        self.set_value(self.value - delta)

    def __iadd__(self, delta):
        self.increment(delta)
        return self

    def __isub__(self, delta):
        self.decrement(delta)
        return self

    def __str__(self):
        return self.name


class Marker:
    """An instant marker of a :class:`Domain`."""

    def __init__(self, domain, name):
        self.domain = _check_domain(domain)
        self.name = name

    def mark(self, scope="process"):
        """Records an instant ('i') event; ``scope`` is ``'global'``, ``'process'``,
        ``'thread'``, ``'task'`` or ``'marker'``."""
        if scope not in _MARKER_SCOPES:
            raise ValueError(f"Marker scope must be one of {sorted(_MARKER_SCOPES)}, "
                             f"got {scope!r}")
        _record({"ph": "i", "name": self.name, "cat": self.domain.name, "thread": _frontend(),
                 "ts": _native.profiler_now_us(), "dur": 0.0, "args": {"scope": scope}})


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
    out = [(f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{h}" '
            f'font-family="monospace" font-size="11">'),
           f'<rect width="{width}" height="{h}" fill="white"/>',
           (f'<text x="10" y="20" font-size="13">ferromx timeline — {span / 1000:.2f} ms; '
            'blue: engine ops, red: frontend waits</text>')]
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
