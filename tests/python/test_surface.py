"""The public surface of ferromx against MXNet 1.9.1's, per module.

``tests/fixtures/surface/record_surface.py`` recorded, in the MXNet venv, every name reachable
as ``mxnet.<module>.<name>`` that does not start with ``_`` (plus a few underscore names that
programs import), with where each object was defined. A name counts when it is MXNet's own
(defined in an ``mxnet`` module) or a plain constant; re-exported standard-library, NumPy or
ctypes objects (``test_utils.np``, ``base.ctypes`` ...) are not part of the surface, except the
few in ``FOREIGN_REQUIRED``.

Modules marked complete must have every name but those excluded below (with the reason);
the others are being filled in elsewhere, so their coverage must only not fall below the
recorded floor. Coverage is printed per module (``pytest -s``).
"""

import importlib
import json
import os

import ferromx
import pytest

FIX = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "fixtures",
                   "surface", "mxnet_1.9.1_names.json")
with open(FIX) as _f:
    SURFACE = json.load(_f)["modules"]

SPARSE = "sparse storage (csr/row_sparse) is out of scope"
INTERNAL = "MXNet-internal (generated-op modules, indexing helpers, op registration)"
FINANCIAL = ("NumPy's financial functions, removed from NumPy 1.20 (now numpy_financial); MXNet's "
             "fallback binds NumPy's own")

# where MXNet's own objects come from: its modules, and "ndarray"/"symbol", the module name
# MXNet gives its generated operator functions
OWN_ORIGINS = ("mxnet", "ndarray", "symbol")
# per module, further origins that are part of its API (mx.np re-exports NumPy's dtypes and
# constants: mx.np.float32, mx.np.pi ...)
EXTRA_ORIGINS = {"mxnet.numpy": ("numpy",)}
# foreign-origin names that are nevertheless part of MXNet's API
FOREIGN_REQUIRED = {
    "mxnet.base": {"mx_real_t", "mx_float", "mx_int", "mx_uint", "mx_int64", "basestring",
                   "long", "NDArrayHandle", "SymbolHandle", "ProfileHandle", "KVStoreHandle"},
}

# module -> (EXPECTED_COMPLETE, {excluded name: reason}, coverage floor for incomplete ones)
MODULES = {
    "mxnet.test_utils": (True, {}, None),
    "mxnet.base": (True, {
        "libinfo": "MXNet's C library build information; ferromx has no C library",
    }, None),
    "mxnet.util": (True, {}, None),
    "mxnet.runtime": (True, {}, None),
    "mxnet.context": (True, {}, None),
    "mxnet.profiler": (True, {}, None),
    "mxnet.initializer": (True, {}, None),
    "mxnet.name": (True, {}, None),
    "mxnet.attribute": (True, {}, None),
    # complete since the vision operators and imdecode (2026-12-03)
    "mxnet.ndarray": (True, {
        "sparse": SPARSE,
        **{n: INTERNAL for n in ("gen__internal", "gen_contrib", "gen_image", "gen_linalg",
                                 "gen_op", "gen_sparse", "get_indexing_dispatch_code",
                                 "get_oshape_of_gather_nd_op",
                                 "indexing_key_expand_implicit_axes", "register")},
    }, None),
    # complete since session 19 (2026-12-05)
    "mxnet.numpy": (True, {
        **{n: FINANCIAL for n in ("mirr", "npv", "ppmt", "pv", "rate")},
    }, None),
    # complete since the int8 quantization operators (session 19, 2026-12-05)
    "mxnet.ndarray.contrib": (True, {
        **{n: SPARSE for n in ("SparseEmbedding", "dgl_adjacency", "dgl_csr_neighbor_non_uniform_sample",
                               "dgl_csr_neighbor_uniform_sample", "dgl_graph_compact", "dgl_subgraph",
                               "edge_id", "getnnz")},
    }, None),
    "mxnet.numpy.random": (True, {}, None),
    "mxnet.numpy.linalg": (True, {}, None),
    "mxnet.numpy_extension": (True, {}, None),
    # complete since session 17 (2026-12-04)
    "mxnet.optimizer": (True, {}, None),
    "mxnet.metric": (True, {}, None),
    "mxnet.gluon.loss": (True, {}, None),
}


def _resolve(mx_name):
    """The ferromx module (or module-valued attribute) for an ``mxnet`` module name."""
    name = "ferromx" + mx_name[len("mxnet"):]
    try:
        return importlib.import_module(name)
    except ImportError:
        obj = ferromx
        for part in name.split(".")[1:]:
            obj = getattr(obj, part, None)
            if obj is None:
                return None
        return obj


def _required(mx_name):
    names = SURFACE[mx_name]
    foreign = FOREIGN_REQUIRED.get(mx_name, set())
    origins = OWN_ORIGINS + EXTRA_ORIGINS.get(mx_name, ())

    def own(info):
        origin = info["origin"]
        if origin is None:
            return True
        if info["kind"] == "module" and not origin.startswith("mxnet"):
            return False  # an imported library module (np, os ...)
        return any(origin == o or origin.startswith(o + ".") for o in origins)

    return sorted(n for n, info in names.items() if own(info) or n in foreign)


def _coverage(mx_name):
    mod = _resolve(mx_name)
    required = _required(mx_name)
    present = [n for n in required if mod is not None and hasattr(mod, n)]
    missing = [n for n in required if n not in present]
    return present, missing, required


def test_every_recorded_module_is_classified():
    assert set(MODULES) == set(SURFACE)


@pytest.mark.parametrize("mx_name", sorted(MODULES))
def test_surface(mx_name):
    complete, excluded, floor = MODULES[mx_name]
    present, missing, required = _coverage(mx_name)
    print(f"\n{mx_name}: {len(present)}/{len(required)} names")
    for name in excluded:
        assert name in required, f"{mx_name}.{name} is excluded but not in MXNet's surface"
    if complete:
        unexcused = [n for n in missing if n not in excluded]
        assert unexcused == [], f"{mx_name} lacks {unexcused}"
        stale = [n for n in excluded if n in present]
        assert stale == [], f"{mx_name}: {stale} are present now; drop their exclusions"
    else:
        assert len(present) >= floor, (
            f"{mx_name} coverage fell to {len(present)} (floor {floor}); missing: {missing}")


def test_complete_modules_keep_mxnet_behaviour_markers():
    """A few names whose kind matters: classes stay classes, functions stay callable."""
    import ferromx.profiler as prof
    import ferromx.runtime as rt
    import ferromx.test_utils as tu

    for mod, name in ((prof, "Counter"), (prof, "Domain"), (rt, "Features"), (tu, "DummyIter"),
                      (ferromx.name, "NameManager"), (ferromx.attribute, "AttrScope")):
        assert isinstance(getattr(mod, name), type), name
    for mod, name in ((tu, "environment"), (tu, "assert_almost_equal"), (rt, "feature_list")):
        assert callable(getattr(mod, name)), name
