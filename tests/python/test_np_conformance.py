"""Regression tests for the fixes made while running MXNet 1.9.1's test_numpy_op.py."""

import inspect

import numpy as _np
import pytest

import ferromx as mx
from ferromx import np, npx


def test_numpy_op_signature_module_maps_op_names_to_functions():
    from ferromx import _numpy_op_doc, base, numpy_op_signature

    get = numpy_op_signature._get_builtin_op
    assert get("_np_sum") is np.sum
    # submodules are spelled with a leading underscore, as in MXNet (``_np__random_shuffle``)
    assert get("_np__random_shuffle") is np.random.shuffle
    assert get("_np__linalg_norm") is np.linalg.norm
    assert get("_npx_relu") is npx.relu
    assert get("sum") is None
    with pytest.raises(ValueError, match="no_such_op"):
        get("_np_no_such_op")
    with pytest.raises(ValueError, match="random_normal"):  # as MXNet 1.9.1
        get("_np_random_normal")
    assert base._get_op_submodule_name("_np__random_x", "_np_", base._NP_OP_SUBMODULE_LIST) == (
        "_random_"
    )
    assert inspect.ismodule(_numpy_op_doc)
    # every registered _np_ operator has a stub in _numpy_op_doc (MXNet's own check)
    for name in mx.operator.get_all_registered_operators():
        if name.startswith("_np_"):
            assert hasattr(_numpy_op_doc, name), name
