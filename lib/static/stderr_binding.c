/* SLIP_STATIC_DEPS (cmake/StaticDeps.cmake): Debian's libjpeg.a, libpng16.a (and libcrypto.a)
 * are PIE code, which reaches glibc's `stderr` PC-relative: fine in an executable (a copy
 * relocation), impossible in a shared object. This hidden `stderr` is what those references
 * bind to inside the module; it holds glibc's stream, read once at load time. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>

__attribute__((visibility("hidden"))) FILE* stderr;

__attribute__((constructor)) static void slip_bind_glibc_stderr(void) {
  FILE** glibc_stderr = (FILE**)dlsym(RTLD_DEFAULT, "stderr");
  stderr = glibc_stderr != NULL ? *glibc_stderr : NULL;
}
