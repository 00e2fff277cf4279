// Internal: libjpeg's <jpegint.h> has no include guard; this one does, so two translation units
// that use it can share one unity-build source (SLIP_UNITY_BUILD). Include jpeglib.h first.
#pragma once

#include <jpegint.h>
