"""What a user reads in Python: signatures, per-parameter docs, stubs that match the compiled
module, errors that name what is wrong and carry its context, reprs and attributes."""
import ast
import importlib.util
import inspect
import os
import re
import subprocess
import sys
import tempfile
import textwrap

import pytest

import slipcache
from slipcache import _core

PACKAGE_DIR = os.path.dirname(slipcache.__file__)


def test_package_ships_stubs_and_py_typed():
    assert os.path.isfile(os.path.join(PACKAGE_DIR, "py.typed"))
    assert os.path.isfile(os.path.join(PACKAGE_DIR, "_core.pyi"))
    assert slipcache.__version__ and re.fullmatch(r"\d+\.\d+\.\d+.*", slipcache.__version__)


def test_loader_signature_and_every_parameter_documented():
    sig = inspect.signature(slipcache.Loader)
    params = list(sig.parameters)
    assert params[:2] == ["source", "batch_size"]
    assert sig.parameters["batch_size"].default == 256
    assert sig.parameters["pipeline"].kind is inspect.Parameter.KEYWORD_ONLY
    assert sig.parameters["size"].default is None and sig.parameters["on_error"].default == "raise"
    doc = inspect.getdoc(slipcache.Loader)
    for name in params:
        assert re.search(rf"^\s+{name}: \S", doc, re.M), f"{name} undocumented"
    # the stub of the compiled constructor lists the same parameters (but stage_dir: the wrapper
    # stages the cache, _core.stage, before the compiled Loader opens the staged copy; cache:
    # the wrapper's alias of source)
    assert set(params) - {"stage_dir", "cache"} == set(stub_functions()["Loader"]["__init__"]) - {"self"}
    for cls in (slipcache.Cache, slipcache.Dataset, slipcache.Loader):
        for name, member in vars(cls).items():
            if not name.startswith("_"):
                assert inspect.getdoc(member), f"{cls.__name__}.{name} undocumented"
    assert list(inspect.signature(slipcache.Cache).parameters) == ["path"]
    assert list(inspect.signature(slipcache.Dataset).parameters) == ["source"]
    assert list(inspect.signature(slipcache.Loader.set_weights).parameters) == ["self", "weights", "epoch_size"]
    assert list(inspect.signature(slipcache.Loader.set_epoch).parameters) == ["self", "epoch", "start_batch"]


def test_a_wrong_keyword_is_named(sample_cache):
    with pytest.raises(TypeError) as e:
        slipcache.Loader(sample_cache, num_workers=4)
    assert "num_workers" in str(e.value) and len(str(e.value)) < 120
    for kw, name in [(dict(flip="yes"), "flip"), (dict(size="96"), "size"), (dict(pipeline=96), "pipeline"),
                     (dict(batch_size=None), "batch_size")]:
        with pytest.raises(TypeError, match=f"^{name} must be") as e:
            slipcache.Loader(sample_cache, **kw)


def stub_functions():
    """{class or "": {function: [parameter names]}} of _core.pyi."""
    tree = ast.parse(open(os.path.join(PACKAGE_DIR, "_core.pyi")).read())
    out = {"": {}}
    for node in tree.body:
        if isinstance(node, ast.ClassDef):
            members = out.setdefault(node.name, {})
            for item in node.body:
                if isinstance(item, ast.FunctionDef):
                    members[item.name] = [a.arg for a in item.args.args]
                elif isinstance(item, ast.AnnAssign):
                    members[item.target.id] = None
        elif isinstance(node, ast.AnnAssign):
            out[""][node.target.id] = None
        elif isinstance(node, ast.FunctionDef):
            out[""][node.name] = [a.arg for a in node.args.args]
    return out


def public(obj):
    return {n for n in dir(obj) if not n.startswith("_")}


def test_stub_names_match_the_compiled_module():
    stubs = stub_functions()
    module_names = {n for n in dir(_core) if not n.startswith("_")} | {"__version__"}
    assert set(stubs) - {""} | set(stubs[""]) == module_names
    for name, members in stubs.items():
        if not name:
            continue
        cls = getattr(_core, name)
        if issubclass(cls, BaseException):
            want = set(members)
            assert all(hasattr(cls, m) for m in want)
            continue
        assert {m for m in members if not m.startswith("_")} == public(cls), name
        assert all(m in vars(cls) for m in members), name
        for method, args in members.items():
            if args is None or method.startswith("__") or isinstance(getattr(cls, method), property):
                continue
            doc = getattr(cls, method).__doc__.splitlines()[0]  # pybind11's signature line
            assert re.findall(r"(\w+): ", doc.split("(", 1)[1]) == args, (name, method, doc)


def test_stubtest_when_mypy_is_installed():
    if importlib.util.find_spec("mypy") is None:
        pytest.skip("mypy not installed (Debian: python3-mypy)")
    allowlist = os.path.join(os.path.dirname(__file__), "stubtest_allowlist.txt")
    out = subprocess.run([sys.executable, "-m", "mypy.stubtest", "slipcache._core", "--allowlist", allowlist],
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stdout + out.stderr


@pytest.mark.parametrize("layout,shape", [("NCHW", (2, 3, 32, 32)), ("nchw", (2, 3, 32, 32)), ("chw", (2, 3, 32, 32)),
                                          ("CHW", (2, 3, 32, 32)), ("hwc", (2, 32, 32, 3)), ("nhwc", (2, 32, 32, 3))])
def test_layout_any_spelling_any_case(sample_cache, layout, shape):
    # One spelling everywhere: `slip bench --layout` says hwc/chw, the Loader said NHWC/NCHW.
    batch = next(iter(slipcache.Loader(sample_cache, batch_size=2, pipeline="32@0.5-1", layout=layout)))
    assert batch["image"].shape == shape


def test_errors_carry_code_path_and_sample(sample_cache):
    with pytest.raises(slipcache.Error) as e:
        slipcache.Cache("/nonexistent/cache")
    assert e.value.code == 4 and e.value.kind == "io" and e.value.path.startswith("/nonexistent")
    assert e.value.sample is None and "/nonexistent" in str(e.value)
    with pytest.raises(slipcache.Error) as e:
        slipcache.Loader(sample_cache, layout="CWH")
    assert e.value.code == 2 and e.value.kind == "usage"
    assert e.value.message == "layout must be HWC (NHWC) or CHW (NCHW), in any case, not 'CWH'"
    assert isinstance(e.value, RuntimeError) and slipcache.Error.__module__ == "slipcache"
    assert "exit status" in slipcache.Error.__doc__


def test_repr_and_attributes(sample_cache):
    cache = slipcache.Cache(sample_cache)
    assert repr(cache) == f"slipcache.Cache({cache.path!r}, samples=40, fields=['image', 'label', 'index', 'path'])"
    ld = slipcache.Loader(cache, batch_size=16, world_size=2, rank=1, dtype="float32")
    assert ld.batch_size == 16 and ld.dataset is cache and ld.cache is cache and ld.fields == ["label"]
    assert ld.samples_per_epoch == 20 and len(ld) == 2
    r = repr(ld)
    assert r.startswith("slipcache.Loader(") and "batch_size=16" in r and "rank=1, world_size=2" in r and "epoch=0" in r
    assert "float32" in r


def test_info_shows_the_options_that_made_the_bytes(sample_cache, tmp_path):
    """Caches of one folder made with other options differ in Cache.info(), not only by id."""
    from conftest import SRC, run
    assert slipcache.Cache(sample_cache).info()["options"] == {}
    folder = os.path.join(SRC, "examples", "sample")
    restarts = run("convert", folder, "-o", tmp_path, "-q", "--jpeg-restarts").strip()
    yuv = run("convert", folder, "-o", tmp_path, "-q", "--image-format", "yuv420").strip()
    assert slipcache.Cache(restarts).info()["options"] == {"jpeg-restarts": "1"}
    assert slipcache.Cache(yuv).info()["options"] == {"image-format": "yuv420"}


def test_imported_from_where_expected():
    """scripts/check-python-install.sh: the installed package, not the source tree or build/."""
    prefix = os.environ.get("SLIPCACHE_EXPECT_PREFIX")
    if not prefix:
        pytest.skip("SLIPCACHE_EXPECT_PREFIX not set")
    assert os.path.realpath(slipcache.__file__).startswith(os.path.realpath(prefix) + os.sep), slipcache.__file__


def _build_info_under(value):
    env = dict(os.environ, SLIP_JPEG_INTERNALS=value)
    code = "import slipcache; print(slipcache.build_info())"
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=False)


def test_jpeg_internals_switch_as_the_slip_command_reads_it():
    # off: build_info() reports the public-API path without probing libjpeg (no self-test).
    out = _build_info_under("off")
    assert out.returncode == 0, out.stderr
    assert "JPEG entropy hook: off: turned off by the program (SLIP_JPEG_INTERNALS=off)" in out.stdout
    assert re.search(r"libjpeg loaded: libjpeg-turbo \S+ \(build \d+\) from /", out.stdout), out.stdout
    # Anything but on/off/auto fails the import, naming the variable and the value (was: ignored).
    out = _build_info_under("OFF")
    assert out.returncode != 0
    assert "SLIP_JPEG_INTERNALS: unknown value 'OFF' (on, off or auto)" in out.stderr


def test_import_without_numpy_says_so():
    # A Python that cannot import numpy (a meta path finder refuses it, as a venv without numpy
    # would): `import slipcache` fails at once, naming numpy and how to install it, instead of
    # importing and failing at the first batch.
    script = textwrap.dedent("""
        import sys
        class NoNumpy:
            def find_spec(self, name, path=None, target=None):
                if name == "numpy" or name.startswith("numpy."):
                    raise ModuleNotFoundError("No module named 'numpy'", name="numpy")
        sys.meta_path.insert(0, NoNumpy())
        try:
            import slipcache
        except ImportError as e:
            print("ImportError:", e)
            sys.exit(0)
        sys.exit("imported without numpy")
    """)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=tempfile.gettempdir())
    assert out.returncode == 0, out.stdout + out.stderr
    assert "slipcache needs numpy" in out.stdout and "pip install numpy" in out.stdout, out.stdout
