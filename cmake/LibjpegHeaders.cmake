# Which libjpeg-turbo jpeglib.h and jpegint.h come from (docs/JPEG_ENGINE.md). The engine reads
# jpegint.h structures, whose layout changes between libjpeg-turbo versions; upstream never
# installs jpegint.h (Debian adds it), so a build against another prefix
# (-DCMAKE_PREFIX_PATH=<libjpeg-turbo 3.1 prefix>) would pair that prefix's jpeglib.h with the
# system's jpegint.h. Here the two must be of the same libjpeg-turbo (the same directory, or the
# same LIBJPEG_TURBO_VERSION in the jconfig.h beside each), or jpegint.h comes from the matching
# source tree named by -DSLIP_LIBJPEG_TURBO_SOURCE_DIR; otherwise the public API only is compiled
# and configure says why. Sets SLIP_JPEG_HEADER_ORIGIN and SLIP_JPEG_PUBLIC_ONLY_WHY (for
# slip --version) and, for the public-API path, the SLIP_NO_JPEG_INTERNALS definition.
set(SLIP_LIBJPEG_TURBO_SOURCE_DIR "" CACHE PATH
    "libjpeg-turbo source tree whose src/jpegint.h matches the jpeglib.h found (upstream does not install jpegint.h)")

# LIBJPEG_TURBO_VERSION of the jconfig.h that headers in `dir` are compiled with (beside them,
# or in the multiarch directory below, as Debian has it); "" when there is none.
function(slip_jconfig_version dir out)
  set(version "")
  foreach(candidate "${dir}/jconfig.h" "${dir}/${CMAKE_LIBRARY_ARCHITECTURE}/jconfig.h")
    if(EXISTS "${candidate}")
      file(STRINGS "${candidate}" line REGEX "^#define[ \t]+LIBJPEG_TURBO_VERSION[ \t]")
      string(REGEX REPLACE "^#define[ \t]+LIBJPEG_TURBO_VERSION[ \t]+([^ \t]+).*$" "\\1" version "${line}")
      break()
    endif()
  endforeach()
  set(${out} "${version}" PARENT_SCOPE)
endfunction()

# The directories the compiler searches: pkg-config's -I first, then the system's.
find_path(SLIP_JPEGLIB_DIR jpeglib.h HINTS ${LIBJPEG_INCLUDE_DIRS} NO_CACHE)
string(REGEX REPLACE "(.)/+$" "\\1" SLIP_JPEGLIB_DIR "${SLIP_JPEGLIB_DIR}")
slip_jconfig_version("${SLIP_JPEGLIB_DIR}" _jpeglib_version)
set(SLIP_JPEG_HEADER_ORIGIN "jpeglib.h ${_jpeglib_version} from ${SLIP_JPEGLIB_DIR}")
set(SLIP_JPEG_PUBLIC_ONLY_WHY "")

if(NOT SLIP_JPEG_INTERNALS)
  set(SLIP_JPEG_PUBLIC_ONLY_WHY "-DSLIP_JPEG_INTERNALS=OFF")
elseif(SLIP_LIBJPEG_TURBO_SOURCE_DIR)
  # 3.x keeps its sources in src/, 2.x at the top.
  set(_tree "${SLIP_LIBJPEG_TURBO_SOURCE_DIR}")
  set(_jpegint "${_tree}/src/jpegint.h")
  if(NOT EXISTS "${_jpegint}")
    set(_jpegint "${_tree}/jpegint.h")
  endif()
  file(STRINGS "${_tree}/CMakeLists.txt" _line REGEX "^set\\(VERSION ")
  string(REGEX REPLACE "^set\\(VERSION ([^)]+)\\).*$" "\\1" _tree_version "${_line}")
  if(NOT EXISTS "${_jpegint}" OR NOT _tree_version STREQUAL _jpeglib_version)
    message(FATAL_ERROR "SLIP_LIBJPEG_TURBO_SOURCE_DIR=${_tree} is libjpeg-turbo '${_tree_version}' (jpegint.h: ${_jpegint}), "
                        "but jpeglib.h in ${SLIP_JPEGLIB_DIR} is libjpeg-turbo '${_jpeglib_version}': they must be the same release")
  endif()
  # Only jpegint.h, in a directory of its own searched first (the tree's other headers stay out).
  configure_file("${_jpegint}" "${CMAKE_BINARY_DIR}/libjpeg-internal/jpegint.h" COPYONLY)
  include_directories(BEFORE "${CMAKE_BINARY_DIR}/libjpeg-internal")
  string(APPEND SLIP_JPEG_HEADER_ORIGIN ", jpegint.h from the source tree ${_tree}")
else()
  find_path(SLIP_JPEGINT_DIR jpegint.h HINTS ${LIBJPEG_INCLUDE_DIRS} NO_CACHE)
  string(REGEX REPLACE "(.)/+$" "\\1" SLIP_JPEGINT_DIR "${SLIP_JPEGINT_DIR}")
  if(NOT SLIP_JPEGINT_DIR)
    set(SLIP_JPEG_PUBLIC_ONLY_WHY "no jpegint.h beside jpeglib.h (libjpeg-turbo does not install it: -DSLIP_LIBJPEG_TURBO_SOURCE_DIR=<its source tree>)")
  else()
    slip_jconfig_version("${SLIP_JPEGINT_DIR}" _jpegint_version)
    if(SLIP_JPEGINT_DIR STREQUAL SLIP_JPEGLIB_DIR OR (_jpegint_version AND _jpegint_version STREQUAL _jpeglib_version))
      string(APPEND SLIP_JPEG_HEADER_ORIGIN ", jpegint.h from ${SLIP_JPEGINT_DIR}")
    else()
      set(SLIP_JPEG_PUBLIC_ONLY_WHY
          "jpegint.h in ${SLIP_JPEGINT_DIR} is of libjpeg-turbo '${_jpegint_version}', not of jpeglib.h's ${_jpeglib_version} (-DSLIP_LIBJPEG_TURBO_SOURCE_DIR=<its source tree>)")
    endif()
  endif()
endif()
if(SLIP_JPEG_PUBLIC_ONLY_WHY)
  add_compile_definitions(SLIP_NO_JPEG_INTERNALS)
  if(SLIP_JPEG_INTERNALS)
    message(WARNING "libjpeg-turbo internals not compiled in (the JPEG engine uses libjpeg's public API: same pixels, slower crops): "
                    "${SLIP_JPEG_PUBLIC_ONLY_WHY}")
  endif()
endif()
message(STATUS "libjpeg headers: ${SLIP_JPEG_HEADER_ORIGIN}")
