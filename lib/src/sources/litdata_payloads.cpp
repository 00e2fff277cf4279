// LitData payloads decoded by their serializers: scalars, numpy and tensor arrays (dtype indices,
// shapes), PIL raw images converted to 8-bit L/RGB/RGBA as Pillow's convert("RGB") does.
#include "sources/litdata_payloads.hpp"

#include <array>
#include <cmath>
#include <cstring>

#include "util/untrusted.hpp"

namespace slip::detail::litdata {

namespace {

uint32_t be32(const std::byte* p) {
  const auto* u = reinterpret_cast<const uint8_t*>(p);
  return (uint32_t{u[0]} << 24) | (uint32_t{u[1]} << 16) | (uint32_t{u[2]} << 8) | u[3];
}

// numpy dtype indices (spec 6.7) and torch dtype indices (6.9) -> numpy dtype strings.
std::string numpy_dtype(uint32_t i) {
  static const char* t[] = {"|i1", "<i2", "<i4", "<i8", "|u1", "<u2", "<u4", "<u8", "<f2", "<f4", "<f8", "<c8", "<c16", "|b1"};
  return i < std::size(t) ? t[i] : "";
}
std::string torch_dtype(uint32_t i) {
  static const char* t[] = {"<f4", "<f4", "<f8", "<f8", "<c8", "<c8", "<c16", "<c16", "<f2", "<f2", "",
                            "|u1", "|i1", "<i2", "<i2", "<i4", "<i4", "<i8",  "<i8",  "|b1", "<u2"};
  return i < std::size(t) ? t[i] : "";
}
// One pixel of a Pillow colour mode as RGB, as Image.convert("RGB") computes it: CMYK exactly
// (each channel (255 - c)(255 - k)/255, rounded), HSV exactly (colorsys, rounded), YCbCr
// within 1 (JFIF full-range equations), LAB with the CIE L*a*b* (D65) -> sRGB equations (L
// scaled to 0..100, a and b signed bytes): close to Pillow for colours inside the sRGB gamut.
std::array<uint8_t, 3> pil_to_rgb(const std::string& mode, const uint8_t* p) {
  auto to8 = [](double v) { return static_cast<uint8_t>(v <= 0 ? 0 : v >= 255 ? 255 : std::floor(v + 0.5)); };
  if (mode == "CMYK") {
    const double nk = 255.0 - p[3];
    return {to8((255 - p[0]) * nk / 255), to8((255 - p[1]) * nk / 255), to8((255 - p[2]) * nk / 255)};
  }
  if (mode == "YCbCr") {
    const double y = p[0], cb = p[1] - 128.0, cr = p[2] - 128.0;
    return {to8(y + 1.402 * cr), to8(y - 0.344136 * cb - 0.714136 * cr), to8(y + 1.772 * cb)};
  }
  if (mode == "HSV") {
    const double h = p[0] / 255.0, sat = p[1] / 255.0, v = p[2] / 255.0;
    if (sat <= 0) return {to8(v * 255), to8(v * 255), to8(v * 255)};
    // colorsys.hsv_to_rgb: the sextant of the hue picks which of v, c, a, bb is R, G and B.
    const int i = static_cast<int>(h * 6.0);
    const double f = h * 6.0 - i;
    const double vals[4] = {v, v * (1 - sat * (1 - f)), v * (1 - sat), v * (1 - sat * f)};
    static constexpr int kPick[6][3] = {{0, 1, 2}, {3, 0, 2}, {2, 0, 1}, {2, 3, 0}, {1, 2, 0}, {0, 2, 3}};
    const int* pick = kPick[i % 6];
    const double r = vals[pick[0]], g = vals[pick[1]], b = vals[pick[2]];
    return {to8(r * 255), to8(g * 255), to8(b * 255)};
  }
  // LAB
  const double L = p[0] * 100.0 / 255.0, A = static_cast<int8_t>(p[1]), B = static_cast<int8_t>(p[2]);
  const double fy = (L + 16) / 116, fx = fy + A / 500, fz = fy - B / 200;
  auto finv = [](double t) { return t * t * t > 0.008856 ? t * t * t : (t - 16.0 / 116) / 7.787; };
  const double X = 0.95047 * finv(fx), Y = finv(fy), Z = 1.08883 * finv(fz);
  auto srgb = [&](double c) {
    c = c < 0 ? 0 : c > 1 ? 1 : c;
    return to8(255 * (c > 0.0031308 ? 1.055 * std::pow(c, 1 / 2.4) - 0.055 : 12.92 * c));
  };
  return {srgb(3.2406 * X - 1.5372 * Y - 0.4986 * Z), srgb(-0.9689 * X + 1.8758 * Y + 0.0415 * Z),
          srgb(0.0557 * X - 0.2040 * Y + 1.0570 * Z)};
}

// "<f8" -> 8 (dtypes come from numpy_dtype/torch_dtype, never from the source's bytes).
uint64_t itemsize(const std::string& d) {
  const auto size = d.size() < 2 ? std::nullopt : parse_decimal<uint64_t>(std::string_view(d).substr(2));
  if (!size || *size == 0) throw Error(Errc::bad_input, "dtype \"" + escape_for_terminal(d) + "\" has no element size");
  return *size;
}

// What the ledger says a pil image was: its mode, the mode's channel count and what became
// of them on the way to RGB.
std::string pil_description(const std::string& mode) {
  struct Kind {
    const char* mode;
    int channels;
    const char* what;
  };
  static constexpr Kind kKinds[] = {
      {"RGB", 3, "RGB"},
      {"RGBA", 4, "alpha dropped"},
      {"RGBX", 4, "padding dropped"},
      {"L", 1, "grey"},
      {"P", 1, "palette indices as grey levels, no palette stored"},
      {"PA", 2, "palette indices as grey levels, alpha dropped"},
      {"LA", 2, "grey, alpha dropped"},
      {"1", 1, "bilevel"},
      {"I", 1, "32-bit integers clipped to 0..255"},
      {"F", 1, "32-bit floats clipped to 0..255"},
      {"I;16", 1, "16-bit integers clipped to 0..255"},
      {"CMYK", 4, "converted to RGB as Pillow does"},
      {"YCbCr", 3, "converted to RGB as Pillow does"},
      {"HSV", 3, "converted to RGB as Pillow does"},
      {"LAB", 3, "converted to RGB as Pillow does"},
  };
  for (const Kind& k : kKinds)
    if (mode == k.mode)
      return "pil " + mode + " pixels (" + std::to_string(k.channels) + (k.channels == 1 ? " channel, " : " channels, ") + k.what + ")";
  return "pil " + escape_for_terminal(mode) + " pixels";
}

// PIL raw buffers -> 8-bit L/RGB/RGBA as Pillow's convert("RGB") sees them (docs/FORMAT.md#non-jpeg).
void decode_pil(const Leaf& leaf, std::span<const std::byte> p, Value& v, const PayloadPlace& at) {
  auto bad = [&](const std::string& why) { return at.bad(leaf, why); };
  if (p.size() < 12) throw bad("pil header cut short");
  const uint64_t w = load_le<uint32_t>(p.data()), h = load_le<uint32_t>(p.data() + 4), ml = load_le<uint32_t>(p.data() + 8);
  if (ml == 0 || ml > 16 || p.size() < 12 + ml) throw bad("bad pil mode length");
  const std::string mode(reinterpret_cast<const char*>(p.data() + 12), ml);
  const auto px = p.subspan(12 + ml);
  if (w == 0 || h == 0 || w > 65535 || h > 65535) throw bad("bad pil size");
  const uint64_t n = w * h;
  auto need = [&](uint64_t bytes) {
    if (px.size() != bytes)
      throw bad("pil " + mode + " pixels: " + std::to_string(px.size()) + " bytes, expected " + std::to_string(bytes));
  };
  const auto* u = reinterpret_cast<const uint8_t*>(px.data());
  Bytes out;
  uint8_t channels = 1;
  auto clip = [](double x) { return static_cast<std::byte>(x < 0 ? 0 : x > 255 ? 255 : static_cast<int>(x)); };
  if (mode == "RGB" || mode == "RGBA") {
    channels = mode == "RGB" ? 3 : 4;
    need(n * channels);
    out.assign(px.begin(), px.end());
  } else if (mode == "L" || mode == "P") {  // P without its palette is treated as L
    need(n);
    out.assign(px.begin(), px.end());
  } else if (mode == "LA") {
    need(n * 2);
    out.resize(n);
    for (uint64_t k = 0; k < n; ++k) out[k] = px[2 * k];
  } else if (mode == "1") {
    const uint64_t row = (w + 7) / 8;
    need(row * h);
    out.resize(n);
    for (uint64_t y = 0; y < h; ++y)
      for (uint64_t x = 0; x < w; ++x) out[y * w + x] = (u[y * row + x / 8] >> (7 - x % 8)) & 1 ? std::byte{255} : std::byte{0};
  } else if (mode == "I") {
    need(n * 4);
    out.resize(n);
    for (uint64_t k = 0; k < n; ++k) out[k] = clip(load_le<int32_t>(px.data() + 4 * k));
  } else if (mode == "F") {
    need(n * 4);
    out.resize(n);
    for (uint64_t k = 0; k < n; ++k) out[k] = clip(load_le<float>(px.data() + 4 * k));
  } else if (mode == "I;16") {
    need(n * 2);
    out.resize(n);
    for (uint64_t k = 0; k < n; ++k) out[k] = clip(load_le<uint16_t>(px.data() + 2 * k));
  } else if (mode == "RGBX") {  // the X byte is padding
    channels = 3;
    need(n * 4);
    out.resize(n * 3);
    for (uint64_t k = 0; k < n; ++k)
      for (uint64_t ch = 0; ch < 3; ++ch) out[3 * k + ch] = px[4 * k + ch];
  } else if (mode == "PA") {  // as P: palette indices without the palette are grey levels
    need(n * 2);
    out.resize(n);
    for (uint64_t k = 0; k < n; ++k) out[k] = px[2 * k];
  } else if (mode == "CMYK" || mode == "YCbCr" || mode == "HSV" || mode == "LAB") {
    // Colour models Pillow's convert("RGB") turns into RGB; done the same way here.
    const uint64_t in_channels = mode == "CMYK" ? 4 : 3;
    need(n * in_channels);
    channels = 3;
    out.resize(n * 3);
    for (uint64_t k = 0; k < n; ++k) {
      const auto rgb = pil_to_rgb(mode, u + in_channels * k);
      for (uint64_t ch = 0; ch < 3; ++ch) out[3 * k + ch] = static_cast<std::byte>(rgb[ch]);
    }
  } else {
    throw bad("unsupported pil mode \"" + escape_for_terminal(mode) + "\"");
  }
  v.bytes = std::move(out);
  v.width = static_cast<uint32_t>(w);
  v.height = static_cast<uint32_t>(h);
  v.raw_channels = channels;
  v.raw_description = pil_description(mode);
}

}  // namespace

Error PayloadPlace::bad(const Leaf& leaf, const std::string& why) const {
  Error e(Errc::bad_input, "item " + std::to_string(item) + ": " + ("field \"" + leaf.name + "\": " + why));
  e.with_path((dir / chunk_file).string()).with_offset(offset);
  return e;
}

void parse_array(const Leaf& leaf, std::span<const std::byte> p, std::string& dtype, std::vector<uint64_t>& shape,
                 std::span<const std::byte>& data, const PayloadPlace& at) {
  shape.clear();
  auto bad = [&](const std::string& why) { return at.bad(leaf, why); };
  if (leaf.base == "no_header_numpy" || leaf.base == "no_header_tensor") {
    // The suffix is a small dtype index; anything else is an unknown dtype, not a crash.
    const std::string& sfx = leaf.suffix;
    const unsigned long index = parse_decimal<unsigned long>(sfx).value_or(99);
    dtype = leaf.base == "no_header_numpy" ? numpy_dtype(index) : torch_dtype(index);
    if (dtype.empty()) throw bad("unknown dtype index \"" + escape_for_terminal(leaf.suffix) + "\"");
    if (p.size() % itemsize(dtype)) throw bad("payload is not a whole number of elements");
    shape.push_back(p.size() / itemsize(dtype));
    data = p;
    return;
  }
  const bool tensor = leaf.base == "tensor";
  if (p.size() < 8) throw bad("array header cut short");
  const uint32_t di = tensor ? be32(p.data()) : load_le<uint32_t>(p.data());
  const uint32_t rank = tensor ? be32(p.data() + 4) : load_le<uint32_t>(p.data() + 4);
  dtype = tensor ? torch_dtype(di) : numpy_dtype(di);
  if (dtype.empty()) throw bad("unknown dtype index " + std::to_string(di));
  if (rank > 32 || p.size() < 8 + 4 * uint64_t{rank}) throw bad("array header cut short");
  uint64_t elems = 1;
  for (uint32_t k = 0; k < rank; ++k) {
    const uint64_t d = tensor ? be32(p.data() + 8 + 4 * k) : load_le<uint32_t>(p.data() + 8 + 4 * k);
    if (d && elems > (uint64_t{1} << 40) / d) throw bad("array shape overflows");
    elems *= d;
    shape.push_back(d);
  }
  data = p.subspan(8 + 4 * rank);
  if (data.size() != elems * itemsize(dtype)) throw bad("array data of " + std::to_string(data.size()) + " bytes does not match its shape");
}

void decode_payload(const Leaf& leaf, std::span<const std::byte> p, Value& v, const PayloadPlace& at) {
  auto bad = [&](const std::string& why) { return at.bad(leaf, why); };
  const std::string& b = leaf.base;
  if (b == "int") {
    if (p.size() != 8) throw bad("int payload is not 8 bytes");
    v.int_value = load_le<int64_t>(p.data());
  } else if (b == "bool") {
    if (p.size() != 1) throw bad("bool payload is not 1 byte");
    v.int_value = p[0] != std::byte{0};
  } else if (b == "float") {
    if (p.size() != 8) throw bad("float payload is not 8 bytes");
    v.float_value = load_le<double>(p.data());
  } else if (b == "pil") {
    decode_pil(leaf, p, v, at);
  } else if (leaf.array && leaf.type == FieldType::ndarray) {
    std::string dtype;
    std::vector<uint64_t> shape;
    std::span<const std::byte> data;
    parse_array(leaf, p, dtype, shape, data, at);
    v.bytes.assign(data.begin(), data.end());
  } else {
    v.bytes.assign(p.begin(), p.end());
  }
}

}  // namespace slip::detail::litdata
