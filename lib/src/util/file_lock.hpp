// An exclusive flock() on a lock file, held for a scope: one download of a file at a time, one
// scan of an ImageFolder per job array, one rewrite of a cache's manifest. Waiting is
// interruptible (SIGINT, a call's CancelToken). SharedFileLock: a reader's view of the same.
#pragma once

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <string_view>

#include "slip/error.hpp"
#include "slip/runtime.hpp"
#include "util/file_io.hpp"
#include "util/log.hpp"
#include "util/untrusted.hpp"

namespace slip::detail {

class FileLock {
 public:
  // Throws Error(io) "<what>: ..." naming the lock file when it cannot be created or locked.
  // When another process holds it, says so (log, info: "waiting for <what>") before waiting.
  FileLock(const std::filesystem::path& path, std::string_view what) {
    for (bool told = false;;) {
      try {
        fd_ = open_for_writing(path, Create::keep).release();  // never through a planted link
      } catch (const Error& e) {
        throw Error(e.code(), "cannot create " + std::string(what) + ": " + e.message()).with_path(path.string());
      }
      if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
        if (errno == EWOULDBLOCK && !told) {
          info("waiting for {}, held by another writer: {}", what, escape_for_terminal(path.string()));
          told = true;
        }
        while (::flock(fd_, LOCK_EX) != 0) {
          const int err = errno;
          if (err != EINTR) {
            ::close(fd_);
            fd_ = -1;
            throw_errno("cannot lock " + std::string(what), path.string(), err);
          }
          try {
            throw_if_interrupted();
          } catch (...) {
            ::close(fd_);
            fd_ = -1;
            throw;
          }
        }
      }
      // While we waited, the name may have come to mean another file (convert --force swapped
      // the cache directory holding it for a new one): a lock on the old file keeps nobody out
      // of the new one, so lock what the name means now.
      struct stat held {
      }, named{};
      if (::fstat(fd_, &held) == 0 && ::stat(path.c_str(), &named) == 0 && held.st_dev == named.st_dev && held.st_ino == named.st_ino)
        return;
      ::close(fd_);
      fd_ = -1;
    }
  }
  ~FileLock() {
    if (fd_ >= 0) ::close(fd_);  // closing releases the lock
  }
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;

 private:
  int fd_ = -1;
};

// A shared flock() on an existing lock file, held for a scope: a reader that wants to see at once
// what a writer holding the exclusive lock changes together (a cache's files and its manifest).
// Best effort, never required: it creates nothing (unless `create`: then the file where it may),
// and without the file, permission to open it or a regular file there (a cache may be read-only,
// or someone else's) nothing is held. Waiting is interruptible like FileLock's.
class SharedFileLock {
 public:
  explicit SharedFileLock(const std::filesystem::path& path, bool create = false) {
    // O_NONBLOCK: a FIFO planted under the name must not block the open.
    fd_ = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK | (create ? O_CREAT : 0), 0644);
    if (fd_ < 0 && create) fd_ = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);  // a read-only directory
    struct stat st {};
    if (fd_ >= 0 && (::fstat(fd_, &st) != 0 || !S_ISREG(st.st_mode))) release();
    while (fd_ >= 0 && ::flock(fd_, LOCK_SH) != 0) {
      if (errno != EINTR) {
        release();  // a file system without flock: read without it
        break;
      }
      try {
        throw_if_interrupted();
      } catch (...) {
        release();
        throw;
      }
    }
  }
  ~SharedFileLock() { release(); }
  SharedFileLock(const SharedFileLock&) = delete;
  SharedFileLock& operator=(const SharedFileLock&) = delete;

  bool held() const noexcept { return fd_ >= 0; }

 private:
  void release() noexcept {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }
  int fd_ = -1;
};

}  // namespace slip::detail
