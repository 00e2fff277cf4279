// A program outside the project using the installed libslipstream: open a cache, read a
// sample, verify it.
#include <slip/slip.hpp>

#include <cstdio>
#include <string>

// The headers and the library must agree on the version (SONAME 0.<minor> ensures it at link).
static_assert(SLIP_VERSION_MAJOR == 0 || SLIP_VERSION_MAJOR > 0, "slip/version.hpp reached through slip.hpp");

int main(int argc, char** argv) {
  if (argc != 2) return 2;
  const std::string headers =
      std::to_string(SLIP_VERSION_MAJOR) + "." + std::to_string(SLIP_VERSION_MINOR) + "." + std::to_string(SLIP_VERSION_PATCH);
  if (slip::version() != headers) {
    std::fprintf(stderr, "consumer: headers %s, library %s\n", headers.c_str(), slip::version().c_str());
    return 4;
  }
  try {
    const slip::Cache cache = slip::Cache::open(argv[1]);
    const auto image = *cache.field_index("image");
    const auto payload = cache.payload(image, 0);
    const slip::VerifyReport report = slip::verify_cache(argv[1]);
    std::printf("libslipstream %s: %llu samples, sample 0 sha256 %s, verify %s\n", slip::version().c_str(),
                static_cast<unsigned long long>(cache.size()), slip::sha256_hex(payload).c_str(), report.ok() ? "ok" : "FAILED");
    return report.ok() ? 0 : 1;
  } catch (const slip::Error& e) {
    std::fprintf(stderr, "consumer: %s\n", e.what());
    return 3;
  }
}
