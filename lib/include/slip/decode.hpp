// slip/decode.hpp — the batch decode engine: sample ids in, a caller-owned batch of crops out.
//
// Every crop is a window (x, y, w, h) in source pixels chosen by a sampler, resized to a square
// output with Pillow's separable resampling (antialiased: the filter support widens with the
// shrink factor), optionally flipped. Windows are a pure function of (seed, epoch, sample id,
// crop index) through a counter-based generator, so a batch does not depend on the thread count
// or on which thread took which sample. JPEG payloads are decoded crop-aware through the
// libjpeg API: rows above and below the window are skipped, columns outside it are not
// decoded, and DCT-domain scaling (1/2, 1/4, 1/8) is used when the window is at least twice the
// output size.
#pragma once

#include "slip/export.hpp"
#include "slip/runtime.hpp"

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

SLIP_API_BEGIN
namespace slip {

class Cache;
class Dataset;
struct CropWindow;
struct DecodeOptions;
#ifdef SLIP_UNSTABLE_API  // the library's own tests (slip/export.hpp "Unstable API"); not exported
namespace detail {
// Decodes one sample with these windows (one per crop, single thread).
SLIP_HIDDEN std::vector<uint8_t> decode_crops_for_test(const Cache& cache, uint64_t sample, const DecodeOptions& options,
                                                       const std::vector<CropWindow>& windows);
}  // namespace detail
#endif

enum class CropSampler {
  full,        // the whole image (no resize; the "decode" pipeline)
  center,      // Resize(short side -> out / center_ratio) + CenterCrop(out), as one window
  rrc,         // torchvision 0.14 RandomResizedCrop.get_params, exactly
  direct_rrc,  // analytic RRC: ratio from its feasible range, then scale within what fits
};

// One group of crops of the same size and sampler; the engine writes one output buffer per
// group: [B, count, H, W, 3] (HWC) or [B, count, 3, H, W] (CHW).
struct CropGroup {
  CropSampler sampler = CropSampler::rrc;
  uint32_t size = 224;  // output side in pixels
  uint32_t count = 1;
  double scale_lo = 0.08, scale_hi = 1.0;  // rrc / direct_rrc: area fraction
  double ratio_lo = 3.0 / 4.0, ratio_hi = 4.0 / 3.0;
  double center_ratio = 224.0 / 256.0;  // center: crop side / resized short side
};

// "2x224@0.32-1,8x96@0.05-0.32" (count x size @ scale range; count and range optional) or the
// preset "dino". Throws Error(usage) on a malformed spec.
std::vector<CropGroup> parse_crop_groups(std::string_view spec);

// The named pipelines and their crop groups: slip/pipelines.hpp.

struct CropWindow {
  int32_t x = 0, y = 0, width = 0, height = 0;  // in source pixels, inside the image
  bool flip = false;
  // When box_x1 > box_x0: the exact fractional source box (x0, y0, x1, y1) the output maps
  // to, inside the window (center: where Resize + CenterCrop's pixels come from).
  double box_x0 = 0, box_y0 = 0, box_x1 = 0, box_y1 = 0;
};

// The window of crop `crop_index` of sample `sample` (crop indices count across groups).
CropWindow sample_crop_window(const CropGroup& group, uint32_t image_width, uint32_t image_height, uint64_t seed, uint64_t epoch,
                              uint64_t sample, uint32_t crop_index, double flip_probability);

enum class PixelLayout { hwc, chw };
// The one spelling of a layout everywhere (bench, the CLI, the Python Loader): "hwc" or "nhwc",
// "chw" or "nchw", in any case. Throws Error(usage) naming the accepted spellings otherwise.
PixelLayout parse_pixel_layout(std::string_view name);
enum class PixelType { uint8, float32 };
enum class ResampleFilter { bilinear, bicubic };

// How a JPEG crop is resized (docs/PERFORMANCE.md, "Decoding and `slip bench`", gives the accuracy of each).
enum class ResampleMode {
  automatic,  // planar with crop-aware decoding (1.3-1.7x less time per crop than rgb), rgb without it
  rgb,        // decode to RGB, then Pillow 9.4's resampling: byte-exact with Pillow on the same pixels
  planar,     // resize the JPEG's own Y, Cb, Cr planes (chroma at its stored resolution, 14-bit
              // taps), then convert to RGB: skips libjpeg's chroma upsampling and colour
              // conversion and resizes half the samples; within a documented bound of rgb.
              // YUV420 payloads are resized from their planes the same way. JPEGs that are not
              // YCbCr/grayscale with 1x or 2x chroma subsampling, and other formats, take the
              // rgb path.
};

struct DecodeOptions {
  std::vector<CropGroup> groups = {CropGroup{}};
  double flip_probability = 0.0;
  PixelLayout layout = PixelLayout::hwc;
  PixelType type = PixelType::uint8;
  // float32 only: out = (pixel / 255 - mean) / std, per channel (ImageNet's by default).
  std::array<float, 3> mean = {0.485f, 0.456f, 0.406f};
  std::array<float, 3> std = {0.229f, 0.224f, 0.225f};
  ResampleFilter filter = ResampleFilter::bilinear;
  bool crop_aware = true;  // false: full decode, then crop (the reference path)
  ResampleMode resample = ResampleMode::automatic;
  uint64_t seed = 0;
  unsigned threads = 0;  // 0: available_cpus()
  std::string field;     // empty: the cache's first image field
  // Decode the field's YUV420 sibling files (docs/FORMAT.md#yuv420-siblings, `slip yuv420`) instead of its JPEGs.
  bool yuv420_siblings = false;
};

// The mode `automatic` resolves to for these options: planar when crop_aware is on, rgb
// otherwise (the reference path stays Pillow-exact); rgb and planar are returned as they are.
ResampleMode effective_resample_mode(const DecodeOptions& options);

// Bytes one sample occupies in the output buffer of group g.
size_t crop_group_sample_bytes(const CropGroup& group, PixelType type);

struct RgbImage;  // slip/image.hpp

// A batch of whole RGB images packed one after another in one buffer: image i is the
// images[i].height rows of images[i].width * 3 bytes at pixels.data() + images[i].offset.
class PackedImages {
 public:
  struct Extent {
    size_t offset = 0;
    uint32_t width = 0, height = 0;
  };
  std::vector<Extent> images;

  // The batch's bytes (their storage is reused batch after batch; never zero-filled: every byte
  // of it is an image's).
  std::span<uint8_t> pixels() noexcept { return {storage_.get(), size_}; }
  std::span<const uint8_t> pixels() const noexcept { return {storage_.get(), size_}; }
  size_t capacity() const noexcept { return capacity_; }
  // size() == bytes, reusing the storage when it fits (the pages past `bytes` go back to the
  // system when the last batch used over 4 MiB and over 1/4 more; resize(0) after such a batch
  // gives them all back); else a new block with 1/4 to spare. Contents are then unspecified.
  // The block is mapped from the system itself, not taken from malloc: its pages are exactly
  // the ones a batch touched (and not given back), and neither it nor its release changes how
  // malloc serves the rest of the process (glibc raises its mmap threshold to the size of a
  // large block freed, after which transient buffers up to that size stay in its arenas).
  void resize(size_t bytes);
  // Gives back the block's pages past its first `keep` bytes (whole pages; they read as zeros
  // when used again) and keeps the block and the pages before: what an idle pooled block keeps
  // between epochs (slip::Loader). size() becomes at most `keep`; the bytes before stay.
  void release_past(size_t keep);

 private:
  struct Unmap {
    size_t bytes;  // (no initializer: one would keep unique_ptr from default-constructing it inside this class)
    void operator()(uint8_t* block) const noexcept;
  };
  std::unique_ptr<uint8_t[], Unmap> storage_;
  size_t size_ = 0, capacity_ = 0;
};

class BatchDecoder {
 public:
  // Throws Error(usage) when the field is not an image field or the options are invalid.
  BatchDecoder(const Cache& cache, DecodeOptions options);
  // Over the caches of a dataset (slip/dataset.hpp), which must outlive the decoder: ids are
  // global ids, each sample read from its own cache, and the crops are keyed by the global id,
  // so a batch equals the same batch of the merged cache. An error names the sample's cache
  // file and its id there, and the global id in its message.
  BatchDecoder(const Dataset& dataset, DecodeOptions options);
  ~BatchDecoder();
  BatchDecoder(const BatchDecoder&) = delete;
  BatchDecoder& operator=(const BatchDecoder&) = delete;

  const DecodeOptions& options() const noexcept;
  unsigned threads() const noexcept;

  // Decodes ids[i] into slot i of each group's buffer; outputs[g] must hold at least
  // ids.size() * crop_group_sample_bytes(groups[g], type) bytes. Throws Error(bad_input) naming
  // the first sample that failed to decode (the buffers' contents are then unspecified).
  void decode(std::span<const uint64_t> ids, uint64_t epoch, std::span<const std::span<std::byte>> outputs);

  // Full decodes (no crop, no resize) of ids on all threads; returns the sum of the decoded
  // pixel bytes (the "decode" bench pipeline; the pixels land in per-thread scratch).
  uint64_t decode_full(std::span<const uint64_t> ids);
  // ... and digests[i] = XXH3-64 of ids[i]'s decoded RGB rows (digests.size() == ids.size()).
  uint64_t decode_full(std::span<const uint64_t> ids, std::span<uint64_t> digests);
  // Whole images: images[i] = ids[i]'s decoded image (what engine_decode_full gives), on the
  // decoder's threads and buffers. Each image keeps its pixel storage when the new image fits
  // (unless that storage is over 4 MiB and over twice what it needs), so a caller passing the
  // same images batch after batch allocates only for larger images. Throws as decode() (the
  // images' contents are then unspecified).
  void decode_images(std::span<const uint64_t> ids, std::span<RgbImage> images);
  // The same images packed into one buffer (the Loader's decode pipeline). Its size is planned
  // from the images' headers before decoding, so the storage is one block per batch, reused as
  // long as the batch fits: a caller passing the same PackedImages batch after batch allocates
  // only for a batch larger than any before (with 1/4 to spare); after a much smaller batch the
  // pages it does not use go back to the system. Which thread decodes
  // which image changes nothing of this. Throws as decode() (contents then unspecified).
  void decode_images(std::span<const uint64_t> ids, PackedImages& out);

 private:
  void open(std::span<const Cache* const> caches, const Dataset* dataset, DecodeOptions options);
#ifdef SLIP_UNSTABLE_API
  friend std::vector<uint8_t> detail::decode_crops_for_test(const Cache&, uint64_t, const DecodeOptions&, const std::vector<CropWindow>&);
#endif
  struct SLIP_HIDDEN Impl;  // defined in the library; its members are not exported
  std::unique_ptr<Impl> impl_;
};

// One sample's full image decoded by the engine's single-image path (what verify --decode
// compares against an accurate TurboJPEG decode). Throws Error(bad_input) on a corrupt image.
RgbImage engine_decode_full(std::span<const std::byte> payload);

// The JPEG engine of this process (slip --version, bench --json "engine"). slip's Huffman decoder
// and its partial decompression run inside libjpeg-turbo's internal structures, whose layout
// changes between libjpeg-turbo versions under one SONAME: they are used only when this build's
// headers are of a tested version, the loaded library is of the same ABI generation, and a
// self-test at first use gives libjpeg's own fields and pixels. Otherwise every decode uses
// libjpeg's public API: the same pixels, slower crops.
struct JpegEngineInfo {
  std::string libjpeg_compiled;  // the libjpeg-turbo this build's headers came from, and where CMake found them
  std::string libjpeg_loaded;    // the library this process runs with: version string, file, ABI generation
  bool entropy_hook = false;     // slip's Huffman decoder and partial decompression are in use
  std::string reason;            // why not, when entropy_hook is false
};
// Runs the self-test on first call (a few milliseconds), then answers from memory; never when the
// internals are turned off (set_libjpeg_internals(false)) or the loaded libjpeg is refused
// outright (one built for 12-bit samples: the reason says so, and every JPEG decode fails with
// Error(io) "this libjpeg cannot decode JPEGs for slip").
JpegEngineInfo jpeg_engine_info();
// false: the public-API path only, in this process, from the next decode on (the `slip` command
// and the Python module call it when the environment has SLIP_JPEG_INTERNALS=off); true: the
// internals again where the self-test allows them.
void set_libjpeg_internals(bool allowed);
// SLIP_JPEG_INTERNALS in `env`: "off" calls set_libjpeg_internals(false) (then nothing probes
// libjpeg: jpeg_engine_info() answers without the self-test), "on" or "auto" (the default)
// set_libjpeg_internals(true); any other value throws Error(usage) naming the variable and the
// value (as SLIP_SIMD: exact lower-case words). Returns whether it turned the internals off.
// The slip command, the Python module and the unit tests call it once.
bool apply_libjpeg_environment(const Environment& env);

// The library's version and the versions of the libraries it was built with and loaded, and
// the JPEG engine's and SIMD kernels' state here (slip --version, slipcache.build_info()).
std::string build_info();

}  // namespace slip
SLIP_API_END
