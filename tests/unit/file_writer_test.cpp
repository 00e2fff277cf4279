// util/file_io.hpp FileWriter: what it writes is what was given, whatever the mix of small
// (buffered) and large (direct) writes, including past the sizes where the background flush
// starts; its checksum is the file's XXH3-64, computed independently by xxh3_64_of_file.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "slip/error.hpp"
#include "util/file_io.hpp"

namespace slip::detail {
namespace {

namespace fs = std::filesystem;

fs::path temp_path(const std::string& name) {
  return fs::temp_directory_path() / ("slip-filewriter-" + std::to_string(::getpid()) + "-" + name);
}

TEST(FileWriter, LargeFileWithBackgroundFlushesIsWrittenExactly) {
  const fs::path path = temp_path("large");
  std::mt19937_64 rng(11);
  // 150 MiB in pieces from 1 byte to 6 MiB: buffered and direct writes, and two background
  // flushes (every 64 MiB) running while later pieces are written.
  std::vector<std::byte> expected;
  expected.reserve(150u << 20);
  {
    FileWriter writer(path);
    std::vector<std::byte> piece;
    while (expected.size() < (150u << 20)) {
      const size_t size = rng() % 4 == 0 ? (rng() % (6u << 20)) + 1 : (rng() % 200000) + 1;
      piece.resize(size);
      for (size_t i = 0; i < size; i += 8) {
        const uint64_t v = rng();
        for (size_t k = 0; k < 8 && i + k < size; ++k) piece[i + k] = static_cast<std::byte>(v >> (8 * k));
      }
      writer.write(piece);
      expected.insert(expected.end(), piece.begin(), piece.end());
    }
    writer.close();
    EXPECT_EQ(writer.bytes_written(), expected.size());
    const auto [size, sum] = xxh3_64_of_file(path);
    EXPECT_EQ(size, expected.size());
    EXPECT_EQ(sum, writer.checksum());
    EXPECT_EQ(sum, xxh3_64(expected));
  }
  std::ifstream in(path, std::ios::binary);
  std::vector<std::byte> actual(expected.size());
  in.read(reinterpret_cast<char*>(actual.data()), static_cast<std::streamsize>(actual.size()));
  EXPECT_EQ(in.gcount(), static_cast<std::streamsize>(expected.size()));
  EXPECT_TRUE(actual == expected);
  fs::remove(path);
}

// Borrowed pieces (written in place, gathered with buffered copies by writev) keep their order
// among copied ones; the borrowed memory is overwritten right after each flush(), so a piece
// still referenced after it would show as garbage in the file. 2,000 pieces between flushes
// exceed writev's 1024-piece limit.
TEST(FileWriter, BorrowedAndCopiedPiecesKeepTheirOrder) {
  const fs::path path = temp_path("borrowed");
  std::mt19937_64 rng(5);
  std::vector<std::byte> expected;
  {
    FileWriter writer(path, 1 << 16);
    for (int round = 0; round < 40; ++round) {
      std::vector<std::vector<std::byte>> held;  // alive until this round's flush()
      const int pieces = round % 7 == 0 ? 2000 : 50;
      for (int p = 0; p < pieces; ++p) {
        const size_t size = rng() % 8 == 0 ? (rng() % (200u << 10)) + 1 : (rng() % 3000) + 1;
        std::vector<std::byte> piece(size);
        for (auto& b : piece) b = static_cast<std::byte>(rng());
        expected.insert(expected.end(), piece.begin(), piece.end());
        if (rng() % 2 == 0) {
          writer.write(piece);
        } else {
          held.push_back(std::move(piece));
          writer.write_borrowed(held.back());
        }
      }
      writer.flush();
      for (auto& piece : held) std::fill(piece.begin(), piece.end(), std::byte{0xEE});
    }
    writer.close();
    EXPECT_EQ(writer.checksum(), xxh3_64(expected));
  }
  std::ifstream in(path, std::ios::binary);
  std::vector<std::byte> actual(expected.size() + 1);
  in.read(reinterpret_cast<char*>(actual.data()), static_cast<std::streamsize>(actual.size()));
  ASSERT_EQ(in.gcount(), static_cast<std::streamsize>(expected.size()));
  actual.pop_back();
  EXPECT_TRUE(actual == expected);
  fs::remove(path);
}

TEST(FileWriter, DestroyedWithoutCloseAfterBackgroundFlushesStopsCleanly) {
  const fs::path path = temp_path("abandoned");
  {
    FileWriter writer(path);
    const std::vector<std::byte> piece(8u << 20, std::byte{0x5A});
    for (int i = 0; i < 20; ++i) writer.write(piece);  // 160 MiB: flushes requested
  }  // an error path: no close(); the flushing thread must end before the descriptor closes
  EXPECT_EQ(fs::file_size(path), 160u << 20);
  fs::remove(path);
}

TEST(FileWriter, WriteErrorNamesTheFile) {
  if (!fs::exists("/dev/full")) GTEST_SKIP() << "no /dev/full on this machine";
  FileWriter writer("/dev/full", 1 << 16, FileWriter::Checksum::xxh3, Create::user_output);  // a device: as -o /dev/full
  const std::vector<std::byte> piece(1 << 20, std::byte{1});
  try {
    writer.write(piece);
    writer.close();
    FAIL() << "writing to /dev/full did not fail";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("/dev/full"), std::string::npos) << e.what();
  }
}

// PlacedWriter: pieces placed in order and written by several threads in any order, in windows
// of a few pieces to many MiB (pieces of 0 bytes, 1 byte, sharing pages, straddling the 1 MiB
// populate steps, larger than a step), land where they were placed; the file is exactly their
// concatenation, past the 64 MiB background flushes.
TEST(PlacedWriter, PiecesWrittenOutOfOrderByThreadsLandInPlace) {
  const fs::path path = temp_path("placed");
  std::mt19937_64 rng(5);
  std::vector<std::byte> expected;
  {
    PlacedWriter writer(path);
    uint64_t total = 0;
    while (total < (uint64_t{80} << 20)) {
      const size_t pieces = 1 + rng() % 300;
      std::vector<std::vector<std::byte>> data(pieces);
      std::vector<uint64_t> offsets(pieces);
      for (size_t i = 0; i < pieces; ++i) {
        const uint64_t kind = rng() % 10;
        const size_t size = kind == 0 ? 0 : kind == 1 ? 1 : kind == 2 ? (size_t{3} << 20) + rng() % 5000 : rng() % 70000;
        data[i].resize(size);
        for (auto& b : data[i]) b = static_cast<std::byte>(rng());
        offsets[i] = writer.reserve(size);
        EXPECT_EQ(offsets[i], total);
        total += size;
        expected.insert(expected.end(), data[i].begin(), data[i].end());
      }
      const size_t steps = writer.open_window();
      std::vector<size_t> order(pieces);
      for (size_t i = 0; i < pieces; ++i) order[i] = pieces - 1 - i;  // last first
      std::vector<std::thread> threads;
      for (unsigned t = 0; t < 4; ++t)
        threads.emplace_back([&, t] {
          for (size_t k = t; k < steps; k += 4) writer.populate(k);
        });
      for (auto& th : threads) th.join();
      threads.clear();
      for (unsigned t = 0; t < 4; ++t)
        threads.emplace_back([&, t] {
          for (size_t k = t; k < pieces; k += 4) writer.write_at(offsets[order[k]], data[order[k]]);
        });
      for (auto& th : threads) th.join();
      writer.close_window();
    }
    writer.close();
    EXPECT_EQ(writer.bytes_written(), expected.size());
  }
  std::ifstream in(path, std::ios::binary);
  std::vector<char> got((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  ASSERT_EQ(got.size(), expected.size());
  EXPECT_EQ(std::memcmp(got.data(), expected.data(), got.size()), 0);
  fs::remove(path);
}

}  // namespace
}  // namespace slip::detail
