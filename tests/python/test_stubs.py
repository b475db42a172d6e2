"""``ferromx/_native.pyi`` covers the native module: every function and every NDArray /
CopyTicket member, both as defined in the Rust sources and as present at runtime, with the
runtime parameter names; and the package is marked typed (``py.typed``)."""

import ast
import inspect
import os
import re

import ferromx
import pytest
from ferromx import _native

PKG = os.path.dirname(os.path.abspath(ferromx.__file__))
STUB = os.path.join(PKG, "_native.pyi")
SRC = os.path.join(os.path.dirname(os.path.dirname(PKG)), "crates", "ferromx-py", "src")
# __repr__/__str__ exist on every object; stubs leave them out
_SKIP = {
    "__doc__",
    "__module__",
    "__dict__",
    "__weakref__",
    "__dictoffset__",
    "__weaklistoffset__",
    "__new__",
    "__init__",
    "__repr__",
    "__str__",
}


def _stub():
    with open(STUB) as f:
        tree = ast.parse(f.read(), STUB)
    funcs, classes = {}, {}
    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            funcs[node.name] = node
        elif isinstance(node, ast.ClassDef):
            members = {}
            for item in node.body:
                if isinstance(item, ast.FunctionDef):
                    members[item.name] = item
                elif isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
                    members[item.target.id] = item
            classes[node.name] = members
    return funcs, classes


def _params(fn_node):
    a = fn_node.args
    names = [x.arg for x in a.posonlyargs + a.args + a.kwonlyargs]
    return [n for n in names if n != "self"]


def test_py_typed_marker_exists():
    path = os.path.join(PKG, "py.typed")
    assert os.path.isfile(path)
    assert os.path.getsize(path) == 0


def test_runtime_functions_are_stubbed_with_their_parameters():
    funcs, classes = _stub()
    for name in dir(_native):
        obj = getattr(_native, name)
        if name.startswith("__") or not callable(obj):
            continue
        if isinstance(obj, type):
            assert name in classes, f"class {name} missing from _native.pyi"
            continue
        assert name in funcs, f"function {name} missing from _native.pyi"
        sig = inspect.signature(obj)
        runtime = [
            p.name
            for p in sig.parameters.values()
            if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
        ]
        assert _params(funcs[name]) == runtime, name


@pytest.mark.parametrize("cls", ["NDArray", "CopyTicket"])
def test_runtime_class_members_are_stubbed(cls):
    _, classes = _stub()
    stubbed = classes[cls]
    klass = getattr(_native, cls)
    for name, member in vars(klass).items():
        if name in _SKIP:
            continue
        assert name in stubbed, f"{cls}.{name} missing from _native.pyi"
        sig_text = getattr(member, "__text_signature__", None)
        if sig_text and type(member).__name__ == "method_descriptor":
            runtime = [
                p.name
                for p in inspect.signature(getattr(klass, name)).parameters.values()
                if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
            ][1:]
            assert _params(stubbed[name]) == runtime, f"{cls}.{name}"


def _rust_api():
    """(functions, {class: methods}) defined with #[pyfunction] / #[pymethods] in the bindings."""
    funcs, methods = set(), {}
    names = {"PyND": "NDArray", "CopyTicket": "CopyTicket"}
    for fname in sorted(os.listdir(SRC)):
        if not fname.endswith(".rs"):
            continue
        with open(os.path.join(SRC, fname)) as f:
            text = f.read()
        funcs |= set(
            re.findall(
                r"#\[pyfunction\]\s*(?:#\[pyo3\([^\n]*\)\]\s*)?(?:pub(?:\(crate\))?\s+)?fn\s+(\w+)",
                text,
            )
        )
        for m in re.finditer(r"#\[pymethods\]\s*impl\s+(\w+)\s*\{(.*?)\n\}", text, flags=re.DOTALL):
            body = m.group(2)
            found = set(
                re.findall(r"^    (?:pub(?:\(crate\))?\s+)?fn\s+(\w+)", body, flags=re.MULTILINE)
            )
            # a #[new] constructor is Python's __init__
            for ctor in re.findall(r"#\[new\]\s*(?:pub\s+)?fn\s+(\w+)", body):
                found.discard(ctor)
                found.add("__init__")
            methods.setdefault(names.get(m.group(1), m.group(1)), set()).update(found)
    return funcs, methods


@pytest.mark.skipif(not os.path.isdir(SRC), reason="Rust sources not available")
def test_rust_sources_and_stub_agree():
    funcs, methods = _rust_api()
    assert {"invoke", "waitall", "backward", "profiler_events"} <= funcs  # the parser works
    assert {"asnumpy", "shape"} & methods["NDArray"] == {"shape"}
    stub_funcs, stub_classes = _stub()
    assert funcs - set(stub_funcs) == set(), "native functions missing from _native.pyi"
    # __richcmp__ appears as the six comparison methods
    for cls, names in methods.items():
        names = {n for n in names if n != "__richcmp__"}
        missing = names - set(stub_classes[cls])
        assert not missing, f"{cls} members missing from _native.pyi: {sorted(missing)}"
    assert {"__eq__", "__lt__", "__ge__"} <= set(stub_classes["NDArray"])
