"""The PEP 517 build backend of the slipcache package (pyproject.toml): drives the project's own
CMake build, standard library only, so that `pip install --no-build-isolation .` works offline
with nothing but Debian's build tools (cmake, ninja-build or make, g++, pybind11-dev,
python3-dev; python3-pip and python3-venv for pip itself). scikit-build-core would do the same
but is not packaged for Debian 12.

build_wheel: configures the checkout for the running interpreter (-DPython3_EXECUTABLE=
sys.executable; SLIP_READER_ONLY: only the reading half of libslipstream, so no libarchive,
libcurl or expat; SLIP_PYTHON_WHEEL links it statically into the module, so the wheel needs no
rpath), builds the slip_python target, installs the `python` component (stripped) and zips it
with its .dist-info (LICENSE included). With turbojpeg-source, libjpeg-turbo, libpng, zlib, xxhash,
zstd and OpenSSL are linked statically too (SLIP_STATIC_DEPS) and the module needs only the
C/C++ runtime: the wheel is tagged manylinux_2_X (PEP 600) for the newest glibc symbol it uses.
Otherwise it is tagged linux_<arch>: it needs this machine's shared libraries.
build_editable (PEP 660): the same build in a kept directory; the wheel holds a .pth hook that
imports slipcache from the checkout's python/slipcache and its _core module from that build.
build_sdist: the tracked files of the checkout (git ls-files, else the tree without build
directories) with PKG-INFO.

Settings (pip -C KEY=VALUE / --config-settings, or the environment):
  build-dir        (SLIPCACHE_BUILD_DIR)  the CMake build directory; default: a temporary one,
                                          removed afterwards (editable: ~/.cache/slipcache/...)
  turbojpeg-source (SLIPCACHE_TURBOJPEG_SOURCE) libjpeg-turbo source tree or .tar.xz of the
                                          system's release (Debian's libturbojpeg.a is not
                                          position-independent): a self-contained wheel
  cmake.args       (CMAKE_ARGS)           extra CMake arguments, e.g. a compiler launcher
  build.jobs       (CMAKE_BUILD_PARALLEL_LEVEL) parallel build jobs
"""
from __future__ import annotations

import base64
import hashlib
import os
import platform
import re
import shlex
import shutil
import subprocess
import sys
import sysconfig
import tarfile
import tempfile
import zipfile

SOURCE = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
PACKAGE = "slipcache"


# ---- metadata ---------------------------------------------------------------------------------

def _project_table():
    """pyproject.toml's [project] table: tomllib (3.11+), else the plain `key = value` lines this
    project uses (strings, arrays of strings, inline tables of strings) read as Python literals."""
    path = os.path.join(SOURCE, "pyproject.toml")
    try:
        import tomllib
        with open(path, "rb") as f:
            return tomllib.load(f)["project"]
    except ImportError:
        pass
    import ast
    table, section, pending = {}, None, ""
    with open(path, encoding="utf-8") as f:
        for line in f:
            stripped = line.strip()
            if not pending and (not stripped or stripped.startswith("#")):
                continue
            if not pending and stripped.startswith("["):
                section = stripped.strip("[]").strip()
                continue
            if section != "project":
                continue
            pending += line
            key, _, value = pending.partition("=")
            value = value.strip().replace("true", "True").replace("false", "False")
            if value.startswith("{"):
                value = re.sub(r"(\w+)\s*=", r"'\1':", value)
            try:
                table[key.strip()] = ast.literal_eval(value)
                pending = ""
            except SyntaxError:  # an array continued on the next line
                continue
    return table


def _version():
    with open(os.path.join(SOURCE, "CMakeLists.txt"), encoding="utf-8") as f:
        match = re.search(r"project\(\s*slip\s+VERSION\s+([0-9.]+)", f.read())
    if not match:
        raise RuntimeError("no project(slip VERSION ...) in CMakeLists.txt")
    return match.group(1)


def _metadata():
    project = _project_table()
    name, version = project["name"], _version()
    lines = [
        "Metadata-Version: 2.1",
        f"Name: {name}",
        f"Version: {version}",
        f"Summary: {project.get('description', '')}",
    ]
    if "requires-python" in project:
        lines.append(f"Requires-Python: {project['requires-python']}")
    if isinstance(project.get("license"), dict) and "text" in project["license"]:
        lines.append(f"License: {project['license']['text']}")
    lines.append("License-File: LICENSE")
    for url_name, url in project.get("urls", {}).items():
        if url_name.lower().replace("-", "") == "homepage":
            lines.append(f"Home-page: {url}")
        lines.append(f"Project-URL: {url_name}, {url}")
    for classifier in project.get("classifiers", []):
        lines.append(f"Classifier: {classifier}")
    for requirement in project.get("dependencies", []):
        lines.append(f"Requires-Dist: {requirement}")
    body = ""
    readme = project.get("readme")
    if isinstance(readme, str):
        with open(os.path.join(SOURCE, readme), encoding="utf-8") as f:
            body = f.read()
        lines.append("Description-Content-Type: text/markdown")
    return name, version, "\n".join(lines) + "\n\n" + body


def _normalized(name):
    return re.sub(r"[-_.]+", "_", name).lower()


def _dist_info_name():
    name, version, _ = _metadata()
    return f"{_normalized(name)}-{version}.dist-info"


def _tag():
    """cpXY-cpXY<abiflags>-<platform>: the module is built for this interpreter only."""
    if sys.implementation.name != "cpython":
        raise RuntimeError("slipcache builds for CPython")
    python = f"cp{sys.version_info[0]}{sys.version_info[1]}"
    platform = re.sub(r"[-.]", "_", sysconfig.get_platform())
    return f"{python}-{python}{getattr(sys, 'abiflags', '')}-{platform}"


def _write_dist_info(directory, tag):
    name = _dist_info_name()
    path = os.path.join(directory, name)
    os.makedirs(path, exist_ok=True)
    _, _, metadata = _metadata()
    with open(os.path.join(path, "METADATA"), "w", encoding="utf-8") as f:
        f.write(metadata)
    with open(os.path.join(path, "WHEEL"), "w", encoding="utf-8") as f:
        f.write(f"Wheel-Version: 1.0\nGenerator: slipcache_build\nRoot-Is-Purelib: false\nTag: {tag}\n")
    with open(os.path.join(path, "top_level.txt"), "w", encoding="utf-8") as f:
        f.write(PACKAGE + "\n")
    shutil.copyfile(os.path.join(SOURCE, "LICENSE"), os.path.join(path, "LICENSE"))
    return name


# ---- the CMake build --------------------------------------------------------------------------

def _setting(config_settings, key, env):
    value = (config_settings or {}).get(key)
    if isinstance(value, list):
        value = " ".join(value)
    return value if value is not None else os.environ.get(env)


def _run(command, **kw):
    print("slipcache_build:", " ".join(shlex.quote(str(c)) for c in command), file=sys.stderr, flush=True)
    subprocess.run([str(c) for c in command], check=True, **kw)


def _pybind11_args():
    """-Dpybind11_DIR when pybind11 is a Python package here (build isolation installs it);
    Debian's pybind11-dev is found by CMake by itself."""
    try:
        import pybind11
    except ImportError:
        return []
    return [f"-Dpybind11_DIR={pybind11.get_cmake_dir()}"]


# How long a cold build takes (docs/PYTHON.md): the line pip -v shows before CMake's own output.
_DURATION = ("compiling libslipstream's reading half and the module: about 5 minutes on 2 quiet cores "
             "(ccache: seconds on a rebuild); pip install -v shows CMake's progress")


def _configure_and_build(build_dir, config_settings, static_source=None):
    cmake = shutil.which("cmake")
    if cmake is None:
        raise RuntimeError("cmake (3.25 or later) is needed: apt install cmake")
    configure = [cmake, "-S", SOURCE, "-B", build_dir, "-DCMAKE_BUILD_TYPE=RelWithDebInfo",
                 f"-DPython3_EXECUTABLE={sys.executable}", "-DSLIP_BUILD_PYTHON=ON", "-DSLIP_PYTHON_WHEEL=ON",
                 "-DSLIP_PYTHON_INSTALL_DIR=.", "-DSLIP_READER_ONLY=ON", "-DSLIP_BUILD_TESTS=OFF", "-DSLIP_BUILD_BENCH=OFF",
                 "-DSLIP_BUILD_FUZZ=OFF", f"-DSLIP_STATIC_DEPS={'ON' if static_source else 'OFF'}"]
    if static_source:
        configure.append(f"-DSLIP_TURBOJPEG_SOURCE={os.path.abspath(static_source)}")
    if not os.path.exists(os.path.join(build_dir, "CMakeCache.txt")) and shutil.which("ninja"):
        configure += ["-G", "Ninja"]
    configure += _pybind11_args()
    configure += shlex.split(_setting(config_settings, "cmake.args", "CMAKE_ARGS") or "")
    print(f"slipcache_build: {_DURATION}; build directory {build_dir}", file=sys.stderr, flush=True)
    _run(configure)
    build = [cmake, "--build", build_dir, "--target", "slip_python"]
    jobs = _setting(config_settings, "build.jobs", "CMAKE_BUILD_PARALLEL_LEVEL")
    if jobs:
        build += ["--parallel", jobs]
    _run(build)
    return cmake


# The newest GLIBCXX_3.4.N a distribution of glibc 2.X ships (auditwheel's manylinux policies):
# a module needing GLIBCXX_3.4.30 (GCC 12) runs on glibc 2.35 systems at the earliest.
_GLIBCXX_TO_GLIBC = [(19, 17), (22, 24), (25, 28), (28, 31), (29, 34), (30, 35), (32, 39), (33, 40)]
# What a manylinux wheel's extension may need (PEP 600: the C/C++ runtime of the distribution).
RUNTIME_LIBRARIES = {"libc.so.6", "libm.so.6", "libstdc++.so.6", "libgcc_s.so.1", "libpthread.so.0", "libdl.so.2",
                     "librt.so.1", "ld-linux-x86-64.so.2", "ld-linux-aarch64.so.1"}


def elf_requirements(path):
    """(NEEDED entries, newest GLIBC_2.X as X, newest GLIBCXX_3.4.N as N) of a shared object, by readelf."""
    dynamic = subprocess.run(["readelf", "-d", path], check=True, capture_output=True, text=True).stdout
    needed = re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", dynamic)
    versions = subprocess.run(["readelf", "-V", path], check=True, capture_output=True, text=True).stdout
    glibc = max((int(m) for m in re.findall(r"Name: GLIBC_2\.(\d+)", versions)), default=0)
    glibcxx = max((int(m) for m in re.findall(r"Name: GLIBCXX_3\.4\.(\d+)", versions)), default=0)
    return needed, glibc, glibcxx


def _platform_tag(module):
    """manylinux_2_X_<arch> when the module needs only the C/C++ runtime, X from the newest glibc
    (and libstdc++) symbol version it uses; else this machine's linux_<arch>."""
    fallback = re.sub(r"[-.]", "_", sysconfig.get_platform())
    if not sys.platform.startswith("linux") or shutil.which("readelf") is None:
        return fallback
    needed, glibc, glibcxx = elf_requirements(module)
    extra = [n for n in needed if n not in RUNTIME_LIBRARIES]
    if extra:
        print(f"slipcache_build: tagged {fallback}, not manylinux: the module needs {', '.join(extra)} "
              "(-C turbojpeg-source=... links them statically)", file=sys.stderr, flush=True)
        return fallback
    for level, glibc_needed in _GLIBCXX_TO_GLIBC:
        if glibcxx <= level:
            glibc = max(glibc, glibc_needed)
            break
    else:
        glibc = max(glibc, _GLIBCXX_TO_GLIBC[-1][1] + 1)
    return f"manylinux_2_{max(glibc, 17)}_{platform.machine()}"


def _build_package(staging, config_settings):
    python_tag = _tag().rsplit("-", 1)[0]
    static_source = _setting(config_settings, "turbojpeg-source", "SLIPCACHE_TURBOJPEG_SOURCE")
    build_dir = _setting(config_settings, "build-dir", "SLIPCACHE_BUILD_DIR")
    lock = None
    if not build_dir:
        # Outside the checkout, and removed afterwards. The same path for the same checkout and
        # Python, so that ccache (CMAKE_ARGS) finds the last build's objects: their -I paths
        # are part of its key. A lock keeps two builds of one checkout out of each other's way.
        import fcntl
        digest = hashlib.sha256(SOURCE.encode()).hexdigest()[:12]
        build_dir = os.path.join(tempfile.gettempdir(), f"slipcache-build-{python_tag.split('-')[0]}-{digest}")
        lock = open(build_dir + ".lock", "w")
        fcntl.flock(lock, fcntl.LOCK_EX)
        shutil.rmtree(build_dir, ignore_errors=True)
    try:
        cmake = _configure_and_build(build_dir, config_settings, static_source)
        _run([cmake, "--install", build_dir, "--component", "python", "--prefix", staging, "--strip"])
    finally:
        if lock is not None:
            shutil.rmtree(build_dir, ignore_errors=True)
            lock.close()
    modules = [f for f in os.listdir(os.path.join(staging, PACKAGE)) if f.startswith("_core.")]
    if not modules:
        raise RuntimeError("the build installed no slipcache/_core module (was the Python module configured? see CMake's output)")
    return f"{python_tag}-{_platform_tag(os.path.join(staging, PACKAGE, modules[0]))}"


def _record_line(arcname, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{arcname},sha256={digest},{len(data)}"


def _zip_wheel(wheel_directory, root, tag):
    name, version, _ = _metadata()
    wheel_name = f"{_normalized(name)}-{version}-{tag}.whl"
    dist_info = _dist_info_name()
    files = []
    for directory, subdirs, names in os.walk(root):
        subdirs[:] = sorted(d for d in subdirs if d != "__pycache__")
        for n in sorted(names):
            full = os.path.join(directory, n)
            files.append((os.path.relpath(full, root).replace(os.sep, "/"), full))
    files.sort(key=lambda item: (item[0].startswith(dist_info), item[0]))  # .dist-info last
    record, record_name = [], f"{dist_info}/RECORD"
    path = os.path.join(wheel_directory, wheel_name)
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as wheel:
        for arcname, full in files:
            if arcname == record_name:
                continue
            with open(full, "rb") as f:
                data = f.read()
            info = zipfile.ZipInfo(arcname, date_time=(2020, 1, 1, 0, 0, 0))
            info.external_attr = (0o755 if os.access(full, os.X_OK) else 0o644) << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            wheel.writestr(info, data)
            record.append(_record_line(arcname, data))
        record.append(f"{record_name},,")
        wheel.writestr(zipfile.ZipInfo(record_name, date_time=(2020, 1, 1, 0, 0, 0)), "\n".join(record) + "\n")
    return wheel_name


# ---- PEP 517 hooks ------------------------------------------------------------------------------

def get_requires_for_build_wheel(config_settings=None):
    """What build isolation must install: only what this machine lacks (CMake, Ninja, pybind11
    from PyPI); the C/C++ libraries (README's Debian package list) must be there already."""
    needs = []
    if shutil.which("cmake") is None:
        needs.append("cmake>=3.25")
    if shutil.which("ninja") is None and shutil.which("make") is None:
        needs.append("ninja")
    system_pybind11 = any(os.path.isdir(os.path.join(prefix, "share", "cmake", "pybind11")) or
                          os.path.isdir(os.path.join(prefix, "lib", "cmake", "pybind11"))
                          for prefix in ("/usr", "/usr/local", os.environ.get("CONDA_PREFIX", "/nonexistent")))
    if not system_pybind11:
        needs.append("pybind11>=2.10")
    return needs


def get_requires_for_build_sdist(config_settings=None):
    return []


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    return _write_dist_info(metadata_directory, _tag())


# The copyright notices of what a self-contained wheel links in statically (Debian's files).
_STATIC_NOTICES = ["libjpeg62-turbo", "libturbojpeg0", "libpng16-16", "zlib1g", "libxxhash0", "libzstd1", "libssl3"]


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    os.makedirs(wheel_directory, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="slipcache-wheel-") as staging:
        tag = _build_package(staging, config_settings)
        dist_info = os.path.join(staging, _write_dist_info(staging, tag))
        if "manylinux" in tag:
            with open(os.path.join(dist_info, "THIRD_PARTY_NOTICES"), "w", encoding="utf-8") as out:
                out.write("slipcache/_core links these libraries statically; their notices follow.\n")
                for package in _STATIC_NOTICES:
                    path = f"/usr/share/doc/{package}/copyright"
                    if os.path.exists(path):
                        with open(path, encoding="utf-8", errors="replace") as f:
                            out.write(f"\n==== {package} ({path})\n\n{f.read()}")
        return _zip_wheel(wheel_directory, staging, tag)


# ---- PEP 660 editable installs ------------------------------------------------------------------

_EDITABLE_FINDER = """# slipcache, installed editable (pip install -e): the package from the checkout, its compiled
# _core module from the build directory (re-run pip install -e after changing C++ code).
import importlib.abc, importlib.util, sys
_SOURCE, _BUILD = {source!r}, {build!r}

class _SlipcacheFinder(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name != "slipcache":
            return None
        return importlib.util.spec_from_file_location(name, _SOURCE + "/__init__.py", submodule_search_locations=[_SOURCE, _BUILD])

sys.meta_path.append(_SlipcacheFinder())
"""


def get_requires_for_build_editable(config_settings=None):
    return get_requires_for_build_wheel(config_settings)


def prepare_metadata_for_build_editable(metadata_directory, config_settings=None):
    return prepare_metadata_for_build_wheel(metadata_directory, config_settings)


def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
    """A build kept outside the checkout (build-dir, else ~/.cache/slipcache/editable-<python>-<hash>),
    and a wheel of two files: a .pth line and the finder it imports."""
    python_tag = _tag().rsplit("-", 1)[0]
    build_dir = _setting(config_settings, "build-dir", "SLIPCACHE_BUILD_DIR")
    if not build_dir:
        cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        digest = hashlib.sha256(SOURCE.encode()).hexdigest()[:12]
        build_dir = os.path.join(cache, "slipcache", f"editable-{python_tag.split('-')[0]}-{digest}")
    build_dir = os.path.abspath(build_dir)
    _configure_and_build(build_dir, config_settings)
    module_dir = os.path.join(build_dir, "python", PACKAGE)
    os.makedirs(wheel_directory, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="slipcache-editable-") as staging:
        with open(os.path.join(staging, "_slipcache_editable.py"), "w", encoding="utf-8") as f:
            f.write(_EDITABLE_FINDER.format(source=os.path.join(SOURCE, "python", PACKAGE), build=module_dir))
        with open(os.path.join(staging, "_slipcache_editable.pth"), "w", encoding="utf-8") as f:
            f.write("import _slipcache_editable\n")
        tag = f"{python_tag}-{re.sub(r'[-.]', '_', sysconfig.get_platform())}"
        _write_dist_info(staging, tag)
        return _zip_wheel(wheel_directory, staging, tag)


def _source_files():
    try:
        out = subprocess.run(["git", "-C", SOURCE, "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                             check=True, capture_output=True).stdout
        files = [f for f in out.decode().split("\0") if f]
    except (OSError, subprocess.CalledProcessError):  # an unpacked sdist: everything but builds
        files = []
        for directory, subdirs, names in os.walk(SOURCE):
            subdirs[:] = [d for d in subdirs if not d.startswith("build") and d not in (".git", "__pycache__")]
            files += [os.path.relpath(os.path.join(directory, n), SOURCE) for n in names]
    return sorted(f for f in files if os.path.isfile(os.path.join(SOURCE, f)) and f != "PKG-INFO")


def build_sdist(sdist_directory, config_settings=None):
    name, version, metadata = _metadata()
    base = f"{_normalized(name)}-{version}"
    os.makedirs(sdist_directory, exist_ok=True)
    path = os.path.join(sdist_directory, base + ".tar.gz")
    with tarfile.open(path, "w:gz", format=tarfile.PAX_FORMAT) as tar:
        for f in _source_files():
            tar.add(os.path.join(SOURCE, f), arcname=f"{base}/{f}", recursive=False)
        data = metadata.encode()
        info = tarfile.TarInfo(f"{base}/PKG-INFO")
        info.size, info.mode, info.mtime = len(data), 0o644, 0
        import io
        tar.addfile(info, io.BytesIO(data))
    return base + ".tar.gz"
