// Internal: a TurboJPEG handle owned by a unique_ptr (tjDestroy on release).
#pragma once

#include <turbojpeg.h>

#include <memory>

namespace slip::detail {

struct TjDestroy {
  void operator()(void* h) const noexcept { tjDestroy(h); }
};
using TjHandle = std::unique_ptr<void, TjDestroy>;

}  // namespace slip::detail
