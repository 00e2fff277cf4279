// slowfs: a read-only FUSE pass-through that adds a fixed delay to every metadata and data
// operation (getattr, open, opendir, readdir, read), standing in for a network file system
// (NFS, Lustre, GPFS: 0.2-2 ms per request) in tests and benchmarks of the conversion pipeline.
// Requests are served by libfuse's multi-threaded loop, so concurrent requests overlap the way
// they do on a real network file system; a serial reader pays the delay once per request.
//
// With --stats FILE it keeps FILE holding "max_in_flight N": the most requests it has seen in their
// delay at once. Tests assert on that count (1 for a serial reader), not on wall time.
//
// Usage: slowfs SOURCE_DIR MOUNTPOINT [--delay-us N] [--stats FILE] [-f] [-o opts]   (unmount: fusermount3 -u)
#define FUSE_USE_VERSION 31
#define _GNU_SOURCE

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fuse.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static struct {
  char* source;
  int source_fd;
  unsigned delay_us;
  int stats_fd;  // -1: no --stats
} cfg = {.delay_us = 1000, .stats_fd = -1};

static pthread_mutex_t stats_mutex = PTHREAD_MUTEX_INITIALIZER;
static unsigned in_flight, max_in_flight;

// A new maximum is written at once (under the mutex), so the file is current as soon as the
// request that set it has started: a reader's syscall returning means its count is in the file.
static void count_in(int delta) {
  if (cfg.stats_fd < 0) return;
  pthread_mutex_lock(&stats_mutex);
  in_flight += (unsigned)delta;
  if (delta > 0 && in_flight > max_in_flight) {
    max_in_flight = in_flight;
    char line[64];
    const int n = snprintf(line, sizeof line, "max_in_flight %u\n", max_in_flight);
    if (ftruncate(cfg.stats_fd, 0) != 0 || pwrite(cfg.stats_fd, line, (size_t)n, 0) != n) perror("slowfs: --stats");
  }
  pthread_mutex_unlock(&stats_mutex);
}

static void delay(void) {
  count_in(1);
  struct timespec ts = {cfg.delay_us / 1000000, (long)(cfg.delay_us % 1000000) * 1000};
  while (cfg.delay_us != 0 && nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
  count_in(-1);
}

// FUSE paths start with '/'; make them relative to the source directory's fd.
static const char* rel(const char* path) { return path[1] ? path + 1 : "."; }

static void* slow_init(struct fuse_conn_info* conn, struct fuse_config* config) {
  (void)conn;
  config->use_ino = 1;
  config->kernel_cache = 0;
  // No attribute/entry caching in the kernel: every stat reaches us and pays the delay.
  config->entry_timeout = 0;
  config->attr_timeout = 0;
  config->negative_timeout = 0;
  return NULL;
}

static int slow_getattr(const char* path, struct stat* st, struct fuse_file_info* fi) {
  (void)fi;
  delay();
  return fstatat(cfg.source_fd, rel(path), st, AT_SYMLINK_NOFOLLOW) == 0 ? 0 : -errno;
}

static int slow_readlink(const char* path, char* buf, size_t size) {
  delay();
  const ssize_t n = readlinkat(cfg.source_fd, rel(path), buf, size - 1);
  if (n < 0) return -errno;
  buf[n] = '\0';
  return 0;
}

static int slow_opendir(const char* path, struct fuse_file_info* fi) {
  delay();
  const int fd = openat(cfg.source_fd, rel(path), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return -errno;
  DIR* dir = fdopendir(fd);
  if (!dir) {
    const int err = errno;
    close(fd);
    return -err;
  }
  fi->fh = (uint64_t)(uintptr_t)dir;
  return 0;
}

static int slow_readdir(const char* path, void* buf, fuse_fill_dir_t filler, off_t offset, struct fuse_file_info* fi,
                        enum fuse_readdir_flags flags) {
  (void)path;
  (void)offset;
  (void)flags;
  delay();
  DIR* dir = (DIR*)(uintptr_t)fi->fh;
  rewinddir(dir);
  struct dirent* e;
  while ((e = readdir(dir)) != NULL) {
    struct stat st = {0};
    st.st_ino = e->d_ino;
    st.st_mode = (mode_t)(DTTOIF(e->d_type));
    if (filler(buf, e->d_name, &st, 0, 0)) break;
  }
  return 0;
}

static int slow_releasedir(const char* path, struct fuse_file_info* fi) {
  (void)path;
  closedir((DIR*)(uintptr_t)fi->fh);
  return 0;
}

static int slow_open(const char* path, struct fuse_file_info* fi) {
  delay();
  if ((fi->flags & O_ACCMODE) != O_RDONLY) return -EROFS;
  const int fd = openat(cfg.source_fd, rel(path), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -errno;
  fi->fh = (uint64_t)fd;
  return 0;
}

static int slow_read(const char* path, char* buf, size_t size, off_t offset, struct fuse_file_info* fi) {
  (void)path;
  delay();
  const ssize_t n = pread((int)fi->fh, buf, size, offset);
  return n < 0 ? -errno : (int)n;
}

static int slow_release(const char* path, struct fuse_file_info* fi) {
  (void)path;
  close((int)fi->fh);
  return 0;
}

static int slow_statfs(const char* path, struct statvfs* st) {
  (void)path;
  return fstatvfs(cfg.source_fd, st) == 0 ? 0 : -errno;
}

static const struct fuse_operations ops = {
    .init = slow_init,
    .getattr = slow_getattr,
    .readlink = slow_readlink,
    .opendir = slow_opendir,
    .readdir = slow_readdir,
    .releasedir = slow_releasedir,
    .open = slow_open,
    .read = slow_read,
    .release = slow_release,
    .statfs = slow_statfs,
};

int main(int argc, char* argv[]) {
  // slowfs SOURCE MOUNTPOINT [--delay-us N] [--stats FILE] [fuse options...]
  if (argc < 3) {
    fprintf(stderr, "usage: %s SOURCE_DIR MOUNTPOINT [--delay-us N] [--stats FILE] [-f] [-o opts]\n", argv[0]);
    return 2;
  }
  cfg.source = realpath(argv[1], NULL);
  if (!cfg.source) {
    perror(argv[1]);
    return 2;
  }
  cfg.source_fd = open(cfg.source, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (cfg.source_fd < 0) {
    perror(cfg.source);
    return 2;
  }
  // Rebuild argv for libfuse without SOURCE, --delay-us and --stats.
  char** fuse_argv = calloc((size_t)argc + 4, sizeof(char*));
  int n = 0;
  fuse_argv[n++] = argv[0];
  fuse_argv[n++] = argv[2];
  for (int i = 3; i < argc; ++i) {
    if (strcmp(argv[i], "--delay-us") == 0 && i + 1 < argc) {
      cfg.delay_us = (unsigned)strtoul(argv[++i], NULL, 10);
    } else if (strcmp(argv[i], "--stats") == 0 && i + 1 < argc) {
      // Opened before fuse_main daemonizes (which changes to /): a relative path still works.
      cfg.stats_fd = open(argv[++i], O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
      if (cfg.stats_fd < 0) {
        perror(argv[i]);
        return 2;
      }
    } else {
      fuse_argv[n++] = argv[i];
    }
  }
  fuse_argv[n++] = "-o";
  fuse_argv[n++] = "ro,default_permissions,max_threads=64";
  const int rc = fuse_main(n, fuse_argv, &ops, NULL);
  free(fuse_argv);
  return rc;
}
