"""Prints where `cmake --install` puts the slipcache package for this Python and install prefix
(argv[1]): relative to the prefix when it lies inside it.

- A prefix this Python imports from (a venv, a conda env, Debian's /usr/local): the directory it
  imports from, e.g. lib/python3.11/site-packages, or lib/python3.11/dist-packages for Debian's
  /usr/local (sysconfig's default scheme there is posix_local, which already adds "local": giving
  it the prefix as well would make /usr/local/local/...).
- Debian's /usr: the deb_system scheme (lib/python3/dist-packages).
- Any other prefix: the standard layout, lib/pythonX.Y/site-packages, which Python finds through
  PYTHONPATH (docs/PYTHON.md)."""
import os
import sys
import sysconfig

prefix = os.path.realpath(sys.argv[1])


def inside(path):
    path = os.path.realpath(path)
    return path == prefix or path.startswith(prefix + os.sep)


def relative(path):
    return os.path.relpath(os.path.realpath(path), prefix)


in_venv = sys.prefix != sys.base_prefix
if "deb_system" in sysconfig.get_scheme_names() and not in_venv and prefix == os.path.realpath(sys.base_prefix):
    print(relative(sysconfig.get_path("platlib", "deb_system")))
elif inside(sysconfig.get_path("platlib")) and relative(sysconfig.get_path("platlib")).startswith("lib"):
    print(relative(sysconfig.get_path("platlib")))
else:
    print(relative(sysconfig.get_path("platlib", "posix_prefix", vars={"base": prefix, "platbase": prefix})))
