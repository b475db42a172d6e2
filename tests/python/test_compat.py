"""``ferromx.compat``: the opt-in ``mxnet`` -> ``ferromx`` import alias and
``python -m ferromx.compat script.py``."""

import os
import re
import subprocess
import sys
import textwrap
import types

import ferromx
import numpy as np
import pytest
from ferromx import compat

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SEED = os.path.join(ROOT, "examples", "seed_loop.py")


def _mxnet_names():
    return sorted(n for n in sys.modules if n == "mxnet" or n.startswith("mxnet."))


@pytest.fixture
def alias():
    assert not compat.is_installed()
    compat.install()
    yield compat
    compat.uninstall()
    assert not compat.is_installed()
    assert _mxnet_names() == []


def _run(args, cwd, timeout=120, env=None):
    return subprocess.run(  # noqa: PLW1510 - the return code is asserted
        [sys.executable, *args], cwd=cwd, capture_output=True, text=True, timeout=timeout, env=env
    )


def test_import_ferromx_does_not_install_the_alias(tmp_path):
    code = textwrap.dedent("""
        import sys
        import ferromx, ferromx.compat
        print("installed", ferromx.compat.is_installed())
        try:
            import mxnet
        except ModuleNotFoundError:
            print("mxnet absent")
        else:
            print("mxnet is", mxnet.__name__)
    """)
    res = _run(["-c", code], cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    assert "installed False" in res.stdout
    assert "mxnet is ferromx" not in res.stdout


def test_import_forms(alias):
    import mxnet as mx
    import mxnet.gluon.loss
    import mxnet.gluon.nn
    import mxnet.nd
    import mxnet.ndarray as nd2
    from mxnet import autograd, gluon, nd
    from mxnet.gluon import nn
    from mxnet.ndarray import NDArray

    # `mxnet` is a facade over the ferromx package (only __version__ differs)
    assert mx.ndarray is ferromx.ndarray and mx.Context is ferromx.Context
    assert nd is ferromx.nd and nd2 is ferromx.ndarray and nd is nd2
    assert gluon is ferromx.gluon and autograd is ferromx.autograd
    assert nn is ferromx.gluon.nn
    assert NDArray is ferromx.nd.NDArray
    assert mxnet.gluon.loss is ferromx.gluon.loss
    assert sys.modules["mxnet.gluon.nn"] is ferromx.gluon.nn
    assert mxnet.nd is ferromx.nd
    x = mx.nd.array([1.0, 2.0])
    assert isinstance(x, NDArray)
    np.testing.assert_allclose((x * 2).asnumpy(), [2.0, 4.0])


def test_mxnet_version_is_the_reference_release(alias):
    import mxnet
    import mxnet as mx2

    assert mxnet.__version__ == "1.9.1" and mx2 is mxnet
    assert ferromx.__version__ == "0.1.0"  # ferromx keeps its own version
    assert "__version__" in dir(mxnet) and "nd" in dir(mxnet)
    mxnet._compat_probe = 5  # writes reach the ferromx package
    try:
        assert ferromx._compat_probe == 5
    finally:
        del mxnet._compat_probe
    assert not hasattr(ferromx, "_compat_probe")


def test_command_line_reports_mxnet_version(tmp_path):
    script = tmp_path / "ver.py"
    script.write_text("import mxnet, ferromx\nprint('v', mxnet.__version__, ferromx.__version__)\n")
    res = _run(["-m", "ferromx.compat", str(script)], cwd=ROOT)
    assert res.returncode == 0, res.stderr
    assert "v 1.9.1 0.1.0" in res.stdout


def test_aliasing_keeps_ferromx_specs(alias):
    import mxnet
    import mxnet.gluon.nn
    import mxnet.ndarray  # noqa: F401

    assert ferromx.__spec__.name == "ferromx"
    assert ferromx.ndarray.__spec__.name == "ferromx.ndarray"
    assert ferromx.gluon.nn.__spec__.name == "ferromx.gluon.nn"
    assert ferromx.__name__ == "ferromx"


def test_every_ferromx_submodule_has_an_mxnet_name(alias):
    import importlib
    import pkgutil

    for info in pkgutil.walk_packages(ferromx.__path__, "ferromx."):
        if info.name.endswith("__main__") or ".compat" in info.name:
            continue
        real = importlib.import_module(info.name)
        alias_name = "mxnet" + info.name[len("ferromx") :]
        assert importlib.import_module(alias_name) is real, alias_name


def test_unknown_submodule_is_not_found(alias):
    with pytest.raises(ModuleNotFoundError, match="mxnet.no_such_module"):
        import mxnet.no_such_module  # noqa: F401
    with pytest.raises(ImportError):
        from mxnet import no_such_name  # noqa: F401


def test_install_is_idempotent_and_uninstall_removes(alias):
    compat.install()
    assert sum(1 for f in sys.meta_path if f is compat._FINDER) == 1
    import mxnet

    compat.uninstall()
    assert not compat.is_installed()
    assert _mxnet_names() == []
    with pytest.raises(ModuleNotFoundError):
        import mxnet  # noqa: F401
    compat.install()  # the fixture uninstalls again


def test_install_refuses_when_a_real_mxnet_is_loaded():
    fake = types.ModuleType("mxnet")
    sys.modules["mxnet"] = fake
    try:
        with pytest.raises(RuntimeError, match="already imported"):
            compat.install()
        assert not compat.is_installed()
    finally:
        del sys.modules["mxnet"]
    compat.uninstall()


def test_command_line_runs_script_with_args(tmp_path):
    script = tmp_path / "prog.py"
    script.write_text(textwrap.dedent("""
        import sys
        import mxnet as mx
        from mxnet import nd
        import helper  # next to the script, as with `python prog.py`
        print("name", __name__)
        print("argv", sys.argv)
        print("module", mx.__name__)
        print("value", (nd.ones((2,)) * helper.K).asnumpy().tolist())
    """))
    (tmp_path / "helper.py").write_text("K = 3\n")
    res = _run(["-m", "ferromx.compat", str(script), "--epochs", "2", "x"], cwd=ROOT)
    assert res.returncode == 0, res.stderr
    assert "name __main__" in res.stdout
    assert f"argv ['{script}', '--epochs', '2', 'x']" in res.stdout
    assert "module ferromx" in res.stdout
    assert "value [3.0, 3.0]" in res.stdout


def test_command_line_module_form_and_errors(tmp_path):
    (tmp_path / "modprog.py").write_text(
        "import sys\nimport mxnet\nprint('mod', mxnet.__name__, sys.argv[1:])\n"
    )
    env = dict(os.environ, PYTHONPATH=str(tmp_path))
    res = _run(["-m", "ferromx.compat", "-m", "modprog", "a"], cwd=tmp_path, env=env)
    assert res.returncode == 0, res.stderr
    assert "mod ferromx ['a']" in res.stdout
    res = _run(["-m", "ferromx.compat"], cwd=tmp_path)
    assert res.returncode == 2 and "usage" in res.stderr
    res = _run(["-m", "ferromx.compat", str(tmp_path / "missing.py")], cwd=tmp_path)
    assert res.returncode == 2 and "can't open" in res.stderr
    (tmp_path / "fails.py").write_text("import mxnet\nraise SystemExit(7)\n")
    res = _run(["-m", "ferromx.compat", str(tmp_path / "fails.py")], cwd=tmp_path)
    assert res.returncode == 7


def test_seed_loop_with_mxnet_imports(tmp_path):
    with open(SEED) as f:
        src = f.read()
    mx_src = re.sub(r"^(import|from) ferromx\b", r"\1 mxnet", src, flags=re.MULTILINE)
    imports = [ln for ln in mx_src.splitlines() if ln.startswith(("import ", "from "))]
    assert "import mxnet as mx" in imports
    assert "from mxnet import gluon, nd, autograd" in imports
    assert not any("ferromx" in ln for ln in imports)
    script = tmp_path / "seed_loop_mxnet.py"
    script.write_text(mx_src)
    res = _run(["-m", "ferromx.compat", str(script)], cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    losses = [
        float(m) for m in re.findall(r"^Loss: ([-+0-9.eE]+)$", res.stdout, flags=re.MULTILINE)
    ]
    assert len(losses) == 7, res.stdout  # 1024 / 128 batches, the first has no previous loss
    assert all(np.isfinite(losses)) and all(0 < v < 10 for v in losses)
