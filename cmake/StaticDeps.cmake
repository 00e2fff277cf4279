# SLIP_STATIC_DEPS: the reader-only library's dependencies linked statically, so the Python
# wheel's module needs only the C/C++ runtime (scripts/check-wheel.sh checks its NEEDED).
# Defines SLIP_STATIC_LIBS (what slipstream_objects links) and the link options a shared object
# made from them needs (SLIP_STATIC_LINK_OPTIONS).
#
# Debian's static libjpeg-turbo is not position-independent: libturbojpeg.a's turbojpeg.c.o has
# absolute and local-exec TLS relocations (R_X86_64_32S, R_X86_64_TPOFF32), so TurboJPEG
# (turbojpeg.c and the files it needs) is compiled here, position-independent, from
# libjpeg-turbo's source release of the same major.minor as the system's libjpeg
# (-DSLIP_TURBOJPEG_SOURCE=<tree or .tar.xz/.tar.gz>; ../shared/third_party has 2.1.5.1).
# libjpeg.a, libpng16.a and libcrypto.a are PIE code: linked with their symbols hidden
# (--exclude-libs), their PC-relative references stay inside the module, and the one they make
# to glibc's `stderr` binds to a hidden copy of it (lib/static/stderr_binding.c).
# Debian's libxxhash.a has no run-time dispatcher: XXH3 runs at its SSE2 speed (hash.cpp).
set(SLIP_TURBOJPEG_SOURCE "" CACHE FILEPATH
    "libjpeg-turbo source tree or release archive for a position-independent TurboJPEG (SLIP_STATIC_DEPS)")

function(slip_static_library var name)
  find_library(${var} NAMES lib${name}.a NO_CACHE)
  if(NOT ${var})
    message(FATAL_ERROR "SLIP_STATIC_DEPS: no lib${name}.a (install its -dev package)")
  endif()
  set(${var} "${${var}}" PARENT_SCOPE)
endfunction()

if(NOT SLIP_TURBOJPEG_SOURCE)
  message(FATAL_ERROR "SLIP_STATIC_DEPS needs -DSLIP_TURBOJPEG_SOURCE=<libjpeg-turbo ${_jpeglib_version} source tree or .tar.xz>: "
                      "Debian's libturbojpeg.a is not position-independent (cmake/StaticDeps.cmake)")
endif()
set(_tj_tree "${SLIP_TURBOJPEG_SOURCE}")
if(NOT IS_DIRECTORY "${_tj_tree}")
  set(_tj_unpacked "${CMAKE_BINARY_DIR}/libjpeg-turbo-source")
  if(NOT EXISTS "${_tj_unpacked}/.from" OR NOT "${SLIP_TURBOJPEG_SOURCE}" STREQUAL "$CACHE{_SLIP_TJ_UNPACKED_FROM}")
    file(REMOVE_RECURSE "${_tj_unpacked}")
    file(ARCHIVE_EXTRACT INPUT "${SLIP_TURBOJPEG_SOURCE}" DESTINATION "${_tj_unpacked}")
    file(WRITE "${_tj_unpacked}/.from" "${SLIP_TURBOJPEG_SOURCE}")
    set(_SLIP_TJ_UNPACKED_FROM "${SLIP_TURBOJPEG_SOURCE}" CACHE INTERNAL "")
  endif()
  file(GLOB _tj_tree LIST_DIRECTORIES true "${_tj_unpacked}/libjpeg-turbo-*")
endif()
if(EXISTS "${_tj_tree}/src/turbojpeg.c")
  set(_tj_src "${_tj_tree}/src")  # 3.x
else()
  set(_tj_src "${_tj_tree}")
endif()
file(STRINGS "${_tj_tree}/CMakeLists.txt" _tj_line REGEX "^set\\(VERSION ")
string(REGEX REPLACE "^set\\(VERSION ([^)]+)\\).*$" "\\1" _tj_version "${_tj_line}")
string(REGEX MATCH "^[0-9]+\\.[0-9]+" _tj_minor "${_tj_version}")
string(REGEX MATCH "^[0-9]+\\.[0-9]+" _system_minor "${_jpeglib_version}")
if(NOT EXISTS "${_tj_src}/turbojpeg.c" OR NOT _tj_minor STREQUAL _system_minor)
  message(FATAL_ERROR "SLIP_TURBOJPEG_SOURCE=${SLIP_TURBOJPEG_SOURCE} is libjpeg-turbo '${_tj_version}', "
                      "the system's libjpeg.a is ${_jpeglib_version}: they must be the same major.minor release")
endif()
set(_tj_generated "${CMAKE_BINARY_DIR}/libjpeg-turbo-generated")
file(WRITE "${_tj_generated}/jconfigint.h.new"
     "#define BUILD \"slip\"\n#undef inline\n#define INLINE __inline__ __attribute__((always_inline))\n"
     "#define THREAD_LOCAL __thread\n#define PACKAGE_NAME \"libjpeg-turbo\"\n#define VERSION \"${_tj_version}\"\n"
     "#define SIZEOF_SIZE_T ${CMAKE_SIZEOF_VOID_P}\n#define HAVE_BUILTIN_CTZL\n#define FALLTHROUGH __attribute__((fallthrough));\n")
file(COPY_FILE "${_tj_generated}/jconfigint.h.new" "${_tj_generated}/jconfigint.h" ONLY_IF_DIFFERENT)
add_library(slip_turbojpeg_pic STATIC)
foreach(file turbojpeg.c transupp.c jdatadst-tj.c jdatasrc-tj.c rdbmp.c rdppm.c wrbmp.c wrppm.c)
  target_sources(slip_turbojpeg_pic PRIVATE "${_tj_src}/${file}")
endforeach()
# jconfig.h is the system's (the tree has only jconfig.h.in): the one libjpeg.a was built with.
target_include_directories(slip_turbojpeg_pic PRIVATE "${_tj_generated}" "${_tj_src}")
target_compile_definitions(slip_turbojpeg_pic PRIVATE BMP_SUPPORTED PPM_SUPPORTED)
target_compile_options(slip_turbojpeg_pic PRIVATE -w)  # upstream's code, upstream's warnings
set_target_properties(slip_turbojpeg_pic PROPERTIES POSITION_INDEPENDENT_CODE ON C_VISIBILITY_PRESET hidden)

slip_static_library(_slip_libjpeg_a jpeg)
slip_static_library(_slip_xxhash_a xxhash)
slip_static_library(_slip_zstd_a zstd)
slip_static_library(_slip_png_a png16)
slip_static_library(_slip_z_a z)
slip_static_library(_slip_crypto_a crypto)
set(SLIP_STATIC_LIBS slip_turbojpeg_pic ${_slip_libjpeg_a} ${_slip_xxhash_a} ${_slip_zstd_a} ${_slip_png_a} ${_slip_z_a} ${_slip_crypto_a}
    ${CMAKE_DL_LIBS})
# Nothing of these libraries in the module's dynamic symbol table: hidden, they cannot clash
# with another copy loaded into the same Python (PIL's libjpeg, the ssl module's libcrypto).
set(SLIP_STATIC_LINK_OPTIONS "LINKER:--exclude-libs,ALL")
message(STATUS "Static dependencies: TurboJPEG ${_tj_version} from ${SLIP_TURBOJPEG_SOURCE}, ${_slip_libjpeg_a}, ${_slip_crypto_a}, ...")
