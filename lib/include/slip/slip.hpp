// slip/slip.hpp — the whole public API of libslipstream in one include.
//
//   open a cache ........ slip/cache.hpp   (Cache::open, payload, string, int_value, ...)
//   convert a source .... slip/source.hpp, slip/convert.hpp (open_source, convert)
//   verify .............. slip/verify.hpp  (verify_cache)
//   inspect ............. slip/inspect.hpp (summarize, list_caches)
//   indexes, subsets .... slip/index.hpp, slip/subset.hpp
//   epoch orders ........ slip/shuffle.hpp (EpochOrder)
//   images .............. slip/image.hpp   (header parsing, decode, encode)
//   building blocks ..... slip/npy.hpp, slip/hash.hpp, slip/runtime.hpp, slip/error.hpp
#pragma once

#include "slip/cache.hpp"
#include "slip/convert.hpp"
#include "slip/error.hpp"
#include "slip/hash.hpp"
#include "slip/image.hpp"
#include "slip/index.hpp"
#include "slip/inspect.hpp"
#include "slip/npy.hpp"
#include "slip/runtime.hpp"
#include "slip/schema.hpp"
#include "slip/shuffle.hpp"
#include "slip/source.hpp"
#include "slip/subset.hpp"
#include "slip/verify.hpp"
#include "slip/version.hpp"
#include "slip/yuv420.hpp"
