// An exclusive flock() on a lock file, held for a scope: one download of a file at a time, one
// scan of an ImageFolder per job array. Waiting is interruptible (SIGINT, a call's CancelToken).
#pragma once

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <string_view>

#include "slip/error.hpp"
#include "slip/runtime.hpp"
#include "util/file_io.hpp"

namespace slip::detail {

class FileLock {
 public:
  // Throws Error(io) "<what>: ..." naming the lock file when it cannot be created or locked.
  FileLock(const std::filesystem::path& path, std::string_view what) {
    try {
      fd_ = open_for_writing(path, Create::keep).release();  // never through a planted link
    } catch (const Error& e) {
      throw Error(e.code(), "cannot create " + std::string(what) + ": " + e.message()).with_path(path.string());
    }
    while (::flock(fd_, LOCK_EX) != 0) {
      const int err = errno;
      if (err != EINTR) {
        ::close(fd_);
        fd_ = -1;
        throw_errno("cannot lock " + std::string(what), path.string(), err);
      }
      throw_if_interrupted();
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

}  // namespace slip::detail
