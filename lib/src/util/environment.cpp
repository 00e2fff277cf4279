// The table of environment variables (slip/runtime.hpp environment_variables()).
#include <array>

#include "slip/environment.hpp"

namespace slip {

namespace {

constexpr std::array kEnvironmentVariables{
    EnvironmentVariable{"SLIPSTREAM_CACHE_DIR", "DIR (a leading ~ is $HOME)",
                        "where convert writes caches, ls lists them and remote sources download to (DIR/downloads)", "$HOME/.slipstream"},
    EnvironmentVariable{"HOME", "DIR", "the default cache directory's parent", "none: -o DIR is needed"},
    EnvironmentVariable{"SLIP_SIMD", "scalar, sse4, avx2, avx512",
                        "SIMD level of the decode kernels (a level this CPU lacks is an error; bench --kernels overrides it)",
                        "the best this CPU has"},
    EnvironmentVariable{"SLIP_JPEG_INTERNALS", "on, off, auto",
                        "off: libjpeg's public API only, libjpeg never probed; on, auto: slip's entropy hook where libjpeg's "
                        "self-test allows it",
                        "auto"},
    EnvironmentVariable{"SLIP_PARALLEL_WRITES", "0, 1",
                        "1: convert's workers write the payloads through a shared mapping from -j 8 up (as convert "
                        "--parallel-writes; the cache is byte-identical)",
                        "0: one writer thread"},
    EnvironmentVariable{"SLIP_STAGE_DIR", "DIR",
                        "the Python Loader reads each cache through a node-local copy in DIR (as Loader(stage_dir=DIR) and "
                        "slip stage CACHE --to DIR do: one copy per node)",
                        "caches are read where they lie"},
    EnvironmentVariable{"SLURM_CPUS_PER_TASK", "N", "caps the default thread count (as do the CPU affinity mask and the cgroup quota)",
                        "the CPUs available"},
    EnvironmentVariable{"SLURM_ARRAY_TASK_ID, SLURM_ARRAY_TASK_MIN, SLURM_ARRAY_TASK_COUNT", "N",
                        "which slice convert --shard auto converts", "none: --shard auto is an error"},
    EnvironmentVariable{"AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN", "text", "credentials for s3:// sources",
                        "the credentials file; none: an error unless --no-sign-request"},
    EnvironmentVariable{"AWS_PROFILE, AWS_SHARED_CREDENTIALS_FILE", "NAME, FILE", "the credentials file and its profile",
                        "profile default of $HOME/.aws/credentials"},
    EnvironmentVariable{"AWS_REGION, AWS_DEFAULT_REGION", "NAME", "the region requests are signed for", "us-east-1"},
    EnvironmentVariable{"AWS_ENDPOINT_URL_S3, AWS_ENDPOINT_URL, S3_ENDPOINT_URL", "URL",
                        "the S3 endpoint, addressed path-style (--endpoint-url overrides it)", "AWS itself"},
    EnvironmentVariable{"CURL_CA_BUNDLE", "FILE", "CA certificates for https:// and s3:// transfers", "the system's"},
    EnvironmentVariable{"SOURCE_DATE_EPOCH", "seconds", "the creation time recorded in new manifests (reproducible builds)", "now"},
    EnvironmentVariable{"NO_COLOR", "any non-empty value", "no colour in the log lines", "colour when stderr is a terminal"},
};

}  // namespace

std::span<const EnvironmentVariable> environment_variables() { return kEnvironmentVariables; }

}  // namespace slip
