#include "slip/hash.hpp"

#include <openssl/evp.h>
#include <xxhash.h>
// The *_dispatch entry points pick SSE2, AVX2 or AVX-512 at run time (Debian's libxxhash is
// built with the dispatcher); the plain ones are SSE2 only: 7 against 12 GB/s here. Its
// libxxhash.a has no dispatcher (SLIP_STATIC_DEPS: the self-contained wheel).
#if defined(__x86_64__) && !defined(SLIP_XXHASH_NO_DISPATCH)
#include <xxh_x86dispatch.h>
#define SLIP_XXH3_64 XXH3_64bits_dispatch
#define SLIP_XXH3_64_UPDATE XXH3_64bits_update_dispatch
#else
#define SLIP_XXH3_64 XXH3_64bits
#define SLIP_XXH3_64_UPDATE XXH3_64bits_update
#endif

#include <cstdio>

#include "slip/error.hpp"

namespace slip {

struct Sha256::Impl {
  std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> ctx{EVP_MD_CTX_new(), &EVP_MD_CTX_free};
};

Sha256::Sha256() : impl_(std::make_unique<Impl>()) {
  if (!impl_->ctx || EVP_DigestInit_ex(impl_->ctx.get(), EVP_sha256(), nullptr) != 1)
    throw Error(Errc::io, "OpenSSL: cannot initialise SHA-256");
}
Sha256::~Sha256() = default;
Sha256::Sha256(Sha256&&) noexcept = default;
Sha256& Sha256::operator=(Sha256&&) noexcept = default;

void Sha256::update(std::span<const std::byte> data) { EVP_DigestUpdate(impl_->ctx.get(), data.data(), data.size()); }
void Sha256::update(std::string_view text) { EVP_DigestUpdate(impl_->ctx.get(), text.data(), text.size()); }

std::string Sha256::hex_digest() {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_DigestFinal_ex(impl_->ctx.get(), digest, &len);
  return to_hex(std::as_bytes(std::span(digest, len)));
}

std::string to_hex(std::span<const std::byte> bytes) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(bytes.size() * 2);
  for (const std::byte b : bytes) {
    out += kHex[std::to_integer<unsigned>(b) >> 4];
    out += kHex[std::to_integer<unsigned>(b) & 15];
  }
  return out;
}

std::string md5_hex(std::span<const std::byte> data) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  if (EVP_Digest(data.data(), data.size(), digest, &len, EVP_md5(), nullptr) != 1) throw Error(Errc::io, "OpenSSL: MD5 failed");
  return to_hex(std::as_bytes(std::span(digest, len)));
}

std::string sha256_hex(std::span<const std::byte> data) {
  Sha256 h;
  h.update(data);
  return h.hex_digest();
}
std::string sha256_hex(std::string_view text) {
  Sha256 h;
  h.update(text);
  return h.hex_digest();
}

uint64_t xxh3_64(std::span<const std::byte> data) noexcept { return SLIP_XXH3_64(data.data(), data.size()); }

struct Xxh3::Impl {
  std::unique_ptr<XXH3_state_t, decltype(&XXH3_freeState)> state{XXH3_createState(), &XXH3_freeState};
};
Xxh3::Xxh3() : impl_(std::make_unique<Impl>()) { XXH3_64bits_reset(impl_->state.get()); }
Xxh3::~Xxh3() = default;
Xxh3::Xxh3(Xxh3&&) noexcept = default;
Xxh3& Xxh3::operator=(Xxh3&&) noexcept = default;
void Xxh3::update(std::span<const std::byte> data) noexcept { SLIP_XXH3_64_UPDATE(impl_->state.get(), data.data(), data.size()); }
uint64_t Xxh3::digest() const noexcept { return XXH3_64bits_digest(impl_->state.get()); }

std::string hex64(uint64_t value) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(value));
  return buf;
}

}  // namespace slip
