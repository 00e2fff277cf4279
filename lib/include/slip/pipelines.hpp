// slip/pipelines.hpp — the one list of named pipelines.
//
// `slip bench --pipeline`, the Python Loader's pipeline=, the shell completions, the man pages
// and docs/COMMANDS.md all read this list; adding a pipeline is one entry in
// lib/src/decode/pipelines.cpp (plus a CropSampler and its window function when none of the
// existing samplers fits).
#pragma once

#include "slip/export.hpp"

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "slip/decode.hpp"

SLIP_API_BEGIN
namespace slip {

enum class PipelineKind {
  raw,    // the payload bytes only, no decode (bench's I/O baseline; not a Loader pipeline)
  full,   // whole images, each its own size
  crops,  // crop groups (crop_groups below)
};

struct Pipeline {
  std::string_view name;
  PipelineKind kind = PipelineKind::crops;
  std::string_view help;  // one line: --help, completions, docs
  // crops: a crop spec (parse_crop_groups) when not empty, else one group of `sampler` with
  // CropGroup's defaults (224 px, scale 0.08-1, ratio 3/4-4/3) and `center_ratio`.
  std::string_view crop_spec{};
  CropSampler sampler = CropSampler::rrc;
  double center_ratio = 224.0 / 256.0;  // center: crop side / resized short side (torchvision's 224 of 256)
  bool takes_scale_ratio = false;       // the Loader's scale= and ratio= apply
  bool loader = true;                   // the Python Loader offers it
};

// Every pipeline, in the order help and docs list them.
std::span<const Pipeline> pipelines();
// The pipeline called `name` (exact, lower case), or nullptr.
const Pipeline* find_pipeline(std::string_view name);
// "raw, decode, center, ..." (loader_only: the Loader's), for messages and help.
std::string pipeline_names(std::string_view separator = ", ", bool loader_only = false);
// The crop groups of a named pipeline (decode: one full-image group). Throws Error(usage) for an
// unknown name (listing the names) and for raw, which decodes nothing.
std::vector<CropGroup> pipeline_crop_groups(std::string_view pipeline);

}  // namespace slip
SLIP_API_END
