import os
import subprocess
import pytest

SLIP = os.environ.get("SLIP", "")
SRC = os.environ.get("SLIP_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))
SHARED = os.environ.get("SLIP_SHARED_DIR", "")


def run(*args, binary=False):
    out = subprocess.run([SLIP, *map(str, args)], check=True, capture_output=True)
    return out.stdout if binary else out.stdout.decode()


@pytest.fixture(scope="session")
def sample_cache(tmp_path_factory):
    """The repository's 40-image sample, converted by the slip command."""
    if not SLIP:
        pytest.skip("SLIP (the slip binary) not set")
    out = tmp_path_factory.mktemp("caches")
    return run("convert", os.path.join(SRC, "examples", "sample"), "-o", out, "-q").strip()


@pytest.fixture(scope="session")
def corpus_cache(tmp_path_factory):
    """The 800-image corpus of ../shared (skipped without it)."""
    corpus = os.path.join(SHARED, "corpus", "imagenet_like")
    if not SLIP or not os.path.isdir(corpus):
        pytest.skip("../shared/corpus/imagenet_like not available")
    out = tmp_path_factory.mktemp("corpus")
    return run("convert", corpus, "-o", out, "-q").strip()
