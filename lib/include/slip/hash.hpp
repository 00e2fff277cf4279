// slip/hash.hpp — the digests slip uses: SHA-256 (content ids, provenance) and XXH3-64
// (per-payload and per-file checksums, fast enough to verify at memory bandwidth).
#pragma once

#include "slip/export.hpp"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>

SLIP_API_BEGIN
namespace slip {

std::string sha256_hex(std::span<const std::byte> data);
std::string sha256_hex(std::string_view text);
// MD5, for what others checksum with it (S3 single-part ETags); never for slip's own ids.
std::string md5_hex(std::span<const std::byte> data);

// Lowercase hex of any bytes (digests, HMACs).
std::string to_hex(std::span<const std::byte> bytes);

class Sha256 {
 public:
  Sha256();
  ~Sha256();
  Sha256(Sha256&&) noexcept;
  Sha256& operator=(Sha256&&) noexcept;
  void update(std::span<const std::byte> data);
  void update(std::string_view text);
  std::string hex_digest();  // finishes the hash

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

uint64_t xxh3_64(std::span<const std::byte> data) noexcept;

class Xxh3 {
 public:
  Xxh3();
  ~Xxh3();
  Xxh3(Xxh3&&) noexcept;
  Xxh3& operator=(Xxh3&&) noexcept;
  void update(std::span<const std::byte> data) noexcept;
  uint64_t digest() const noexcept;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// 16 lowercase hex digits.
std::string hex64(uint64_t value);

}  // namespace slip
SLIP_API_END
