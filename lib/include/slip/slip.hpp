// slip/slip.hpp — the whole public API of libslipstream in one include.
//
//   open a cache ........ slip/cache.hpp   (Cache::open, payload, string, int_value, ...)
//   convert a source .... slip/source.hpp, slip/convert.hpp (open_source, convert)
//   verify .............. slip/verify.hpp  (verify_cache)
//   inspect ............. slip/inspect.hpp (summarize, list_caches)
//   indexes, subsets .... slip/index.hpp, slip/subset.hpp
//   epoch orders ........ slip/shuffle.hpp (EpochOrder)
//   training batches .... slip/loader.hpp  (Loader: prefetching thread, buffer pool, elastic state)
//   many caches ......... slip/dataset.hpp (Dataset), slip/mix.hpp (MixedOrder, RankPositions)
//   images .............. slip/image.hpp   (header parsing, decode, encode)
//   batches, crops ...... slip/decode.hpp  (BatchDecoder, DecodeOptions, crop groups)
//   named pipelines ..... slip/pipelines.hpp (pipelines, pipeline_crop_groups)
//   YUV420 siblings ..... slip/yuv420.hpp  (add_yuv420_siblings)
//   job arrays .......... slip/merge.hpp   (merge_parts, part_status)
//   remote sources ...... slip/remote.hpp  (fetch_remote)
//   unstable API ........ slip/sigv4.hpp, and the parts of other headers under SLIP_UNSTABLE_API:
//                          tests and tools only, may change in any release (slip/export.hpp)
//   building blocks ..... slip/npy.hpp, slip/hash.hpp, slip/runtime.hpp, slip/error.hpp, slip/schema.hpp,
//                          slip/environment.hpp (the environment variables), slip/transport.hpp
//   not here ............ the bench harness of `slip bench` (run_bench): a tool built on this
//                          API, not part of it (apps/bench_harness/, its own static library)
//   logging ........... slip/log.hpp    (set_log_handler: the library itself prints nothing)
//   versions, exports ... slip/version.hpp (SLIP_VERSION_*), slip/export.hpp (SLIP_API_BEGIN/END)
#pragma once

#include "slip/cache.hpp"
#include "slip/convert.hpp"
#include "slip/dataset.hpp"
#include "slip/decode.hpp"
#include "slip/error.hpp"
#include "slip/environment.hpp"
#include "slip/error_class.hpp"
#include "slip/export.hpp"
#include "slip/hash.hpp"
#include "slip/image.hpp"
#include "slip/index.hpp"
#include "slip/inspect.hpp"
#include "slip/loader.hpp"
#include "slip/log.hpp"
#include "slip/merge.hpp"
#include "slip/mix.hpp"
#include "slip/npy.hpp"
#include "slip/pipelines.hpp"
#include "slip/remote.hpp"
#include "slip/runtime.hpp"
#include "slip/schema.hpp"
#include "slip/shuffle.hpp"
#include "slip/simd.hpp"
#include "slip/source.hpp"
#include "slip/stage.hpp"
#include "slip/subset.hpp"
#include "slip/transport.hpp"
#include "slip/verify.hpp"
#include "slip/version.hpp"
#include "slip/yuv420.hpp"
#include "slip/yuv420_image.hpp"
