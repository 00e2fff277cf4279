// The registry of named pipelines (slip/pipelines.hpp): a new pipeline is one row here.
#include "slip/pipelines.hpp"

#include <array>
#include <string>

#include "slip/error.hpp"

namespace slip {

namespace {

constexpr std::array kPipelines{
    Pipeline{.name = "raw", .kind = PipelineKind::raw, .help = "payload bytes only, no decode (the I/O baseline)", .loader = false},
    Pipeline{.name = "decode", .kind = PipelineKind::full, .help = "whole images, each its own size", .sampler = CropSampler::full},
    Pipeline{.name = "center",
             .help = "resize the short side to 256/224 of the crop, then center-crop (validation)",
             .sampler = CropSampler::center},
    Pipeline{.name = "rrc",
             .help = "RandomResizedCrop (torchvision 0.14, exactly), decoding only the crop",
             .sampler = CropSampler::rrc,
             .takes_scale_ratio = true},
    Pipeline{.name = "direct-rrc",
             .help = "analytic RandomResizedCrop: no rejection loop, same scale and ratio ranges",
             .sampler = CropSampler::direct_rrc,
             .takes_scale_ratio = true},
    Pipeline{.name = "multicrop", .help = "DINO's 2 global 224 and 8 local 96 crops (crop spec dino)", .crop_spec = "dino"},
};

}  // namespace

std::span<const Pipeline> pipelines() { return kPipelines; }

const Pipeline* find_pipeline(std::string_view name) {
  for (const Pipeline& p : kPipelines)
    if (p.name == name) return &p;
  return nullptr;
}

std::string pipeline_names(std::string_view separator, bool loader_only) {
  std::string out;
  for (const Pipeline& p : kPipelines) {
    if (loader_only && !p.loader) continue;
    if (!out.empty()) out += separator;
    out += p.name;
  }
  return out;
}

std::vector<CropGroup> pipeline_crop_groups(std::string_view name) {
  const Pipeline* p = find_pipeline(name);
  if (p == nullptr) throw Error(Errc::usage, "unknown pipeline '" + std::string(name) + "' (" + pipeline_names() + ")");
  if (p->kind == PipelineKind::raw) throw Error(Errc::usage, "the " + std::string(name) + " pipeline decodes no images: it has no crops");
  if (!p->crop_spec.empty()) return parse_crop_groups(p->crop_spec);
  CropGroup group;
  group.sampler = p->sampler;
  group.center_ratio = p->center_ratio;
  return {group};
}

}  // namespace slip
