#include "decode/huffman_decoder.hpp"

#include <cstring>

#include "util/cpu.hpp"

// The entropy module's interface (jpeg_entropy_decoder), the input controller's scan count
// and libjpeg's MCU layout are libjpeg-turbo internals, installed with its headers here; the
// region decoder attaches this decoder only where libjpeg_internals.hpp allows it.
#include "decode/libjpeg_internals.hpp"
#if SLIP_JPEG_INTERNALS_COMPILED
#include "decode/jpegint_once.hpp"
#define SLIP_JPEG_INTERNALS 1
#else
#define SLIP_JPEG_INTERNALS 0
struct jpeg_entropy_decoder {};
#endif

namespace slip::detail {

struct HuffmanDecoder::Hook {
  jpeg_entropy_decoder pub{};  // first: libjpeg holds &pub (members of other versions: null)
  // Zeros after the struct this build knows: a libjpeg whose entropy struct is larger reads
  // them (insufficient_data FALSE), never past the object, should the layout checks miss it.
  unsigned char reserve[64] = {};
  HuffmanDecoder* self = nullptr;
};

HuffmanDecoder::HuffmanDecoder() : slots_(std::make_unique<Slots>()), hook_(std::make_unique<Hook>()) {}
HuffmanDecoder::~HuffmanDecoder() = default;

namespace {

constexpr int kLookahead = HuffmanDecoder::kLookaheadBits;

// decode_mcu is built for BMI2: its variable shifts (shlx/shrx, one micro-op instead of three)
// are on the dependency chain from one code to the next, 15-20% of its time. Without BMI2,
// libjpeg decodes.
const bool kHaveBmi2 = cpu_has_bmi2();

// Zigzag position -> natural (row-major) index, then 32 more entries of 63: a run may carry the
// position past 63 in a corrupt stream, which libjpeg decodes without a warning into
// coefficient 63 (its own table has a 16-entry tail); a pair entry's second store lands up to
// 31 past 63 before the decoder sees the block ended with the first symbol (decode_mcu's step).
constexpr int kNaturalOrder[64 + 32] = {0,  1,  8,  16, 9,  2,  3,  10, 17, 24, 32, 25, 18, 11, 4,  5,  12, 19, 26, 33, 40, 48, 41, 34,
                                        27, 20, 13, 6,  7,  14, 21, 28, 35, 42, 49, 56, 57, 50, 43, 36, 29, 22, 15, 23, 30, 37, 44, 51,
                                        58, 59, 52, 45, 38, 31, 39, 46, 53, 60, 61, 54, 47, 55, 62, 63, 63, 63, 63, 63, 63, 63, 63, 63,
                                        63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63};

// A magnitude category's bits to the value (JPEG's EXTEND, F.12).
inline int32_t extend(uint32_t bits, int size) {
  return bits < (1u << (size - 1)) ? static_cast<int32_t>(bits) - (1 << size) + 1 : static_cast<int32_t>(bits);
}

// Appends whole bytes from the next eight to a bit buffer of `count` <= 56 bits when none of
// those eight is 0xFF (the usual case: no stuffing, no marker); false, nothing done, otherwise.
inline bool append_plain_bytes(uint64_t& bits, int& count, const uint8_t*& next, const uint8_t* end) {
  if (end - next < 8) return false;
  uint64_t word;
  std::memcpy(&word, next, 8);
  const uint64_t inverted = ~word;
  if (((inverted - 0x0101010101010101ULL) & ~inverted & 0x8080808080808080ULL) != 0) return false;  // a 0xFF byte
  const int take = (64 - count) / 8;
  bits |= (__builtin_bswap64(word) >> (64 - 8 * take)) << (64 - count - 8 * take);
  count += 8 * take;
  next += take;
  return true;
}

// An AC table's one-step entry (Table::fast_value) for a size-0 symbol other than ZRL (a zero
// run of 16), which libjpeg reads as the end of the block.
constexpr int32_t kEndsBlock = 1 << 12;
// Table::pair's flags: a second symbol is in the entry; the block ends within the entry.
constexpr uint64_t kPairHasSecond = uint64_t{1} << 24, kPairEndsBlock = uint64_t{1} << 25;

// Table::pair from an AC table's one-step entries.
void build_pairs(HuffmanDecoder::Table& t) {
  constexpr uint32_t kMask = (1u << kLookahead) - 1;
  for (uint32_t index = 0; index <= kMask; ++index) {
    const int32_t first = t.fast_value[index];
    const int first_length = first & 63;
    uint64_t entry = static_cast<uint64_t>(first_length) | static_cast<uint64_t>((first >> 8) & 15) << 16 |
                     static_cast<uint64_t>(static_cast<uint16_t>(first >> 16)) << 32;
    if (first & kEndsBlock) {
      entry |= kPairEndsBlock;
    } else if (first != 0) {
      // The bits after the first symbol, zeros shifted in: a second symbol is taken only when
      // its own bits are all real ones.
      const int32_t second = t.fast_value[(index << first_length) & kMask];
      if (second != 0 && first_length + (second & 63) <= kLookahead)
        entry += static_cast<uint64_t>(second & 63) | static_cast<uint64_t>((second >> 8) & 15) << 20 | kPairHasSecond |
                 ((second & kEndsBlock) != 0 ? kPairEndsBlock : 0) | static_cast<uint64_t>(static_cast<uint16_t>(second >> 16)) << 48;
    }
    t.pair[index] = entry;
  }
}

// The symbol count of a JPEG table (at most 256 for a valid one).
int symbol_count(const JHUFF_TBL& source) {
  int total = 0;
  for (int l = 1; l <= 16; ++l) total += source.bits[l];
  return total;
}

// True when t was built from this very table.
bool built_from(const HuffmanDecoder::Table& t, const JHUFF_TBL& source, bool dc) {
  static_assert(sizeof source.bits == 17 && sizeof source.huffval == 256);
  const int total = symbol_count(source);
  return t.built && t.built_dc == dc && total <= 256 && std::memcmp(t.built_from, source.bits, 17) == 0 &&
         std::memcmp(t.built_from + 17, source.huffval, static_cast<size_t>(total)) == 0;
}

// The decoding tables of a JPEG table, checked as libjpeg's jpeg_make_d_derived_tbl checks it
// (it has already refused a bad one by now; this keeps the tables safe on their own).
bool build_table(const JHUFF_TBL& source, bool dc, HuffmanDecoder::Table& t) {
  const int total = symbol_count(source);
  if (total > 256) return false;
  int longest = 0;
  for (int l = 1; l <= 16; ++l)
    if (source.bits[l]) longest = l;
  const auto symbols = static_cast<size_t>(total);
  t.built = false;
  std::memset(t.fast, 0, sizeof t.fast);
  std::memset(t.fast_value, 0, sizeof t.fast_value);
  int code = 0, p = 0;
  for (int l = 1; l <= longest; ++l) {
    if (source.bits[l] == 0) {
      t.max_code[l] = -1;
      t.value_offset[l] = 0;
    } else {
      t.value_offset[l] = p - code;
      for (int i = 0; i < source.bits[l]; ++i, ++p, ++code) {
        const uint8_t symbol = source.huffval[p];
        if (dc && symbol > 15) return false;
        t.symbols[p] = symbol;
        if (l > kLookahead) continue;
        const int shift = kLookahead - l, first = code << shift, last = (code + 1) << shift;
        for (int j = first; j < last; ++j) t.fast[j] = static_cast<uint16_t>(l << 8 | symbol);
        const int run = symbol >> 4, size = symbol & 15;
        if (size == 0) {
          // DC: a difference of 0 (value 0). AC: ZRL (a zero run of 16, value 0), else the end of
          // the block.
          const int32_t entry = dc ? l : run == 15 ? l | 15 << 8 : l | kEndsBlock;
          for (int j = first; j < last; ++j) t.fast_value[j] = entry;
          continue;
        }
        if (l + size > kLookahead) continue;
        for (int j = first; j < last; ++j) {
          const int value = extend(static_cast<uint32_t>(j >> (shift - size)) & ((1u << size) - 1), size);
          t.fast_value[j] = value * 65536 + run * 256 + l + size;
        }
      }
      t.max_code[l] = code - 1;
    }
    if (code >= (1 << l)) return false;  // no code may be all ones
    code <<= 1;
  }
  for (int l = longest + 1; l <= 17; ++l) t.max_code[l] = -1;
  if (!dc) build_pairs(t);
  std::memcpy(t.built_from, source.bits, 17);
  std::memcpy(t.built_from + 17, source.huffval, symbols);
  t.built_dc = dc;
  t.built = true;
  return true;
}

}  // namespace

const HuffmanDecoder::Table* HuffmanDecoder::table_for(Slot& slot, const JHUFF_TBL& source, bool dc) {
  ++table_uses_;
  int victim = 0;
  for (int i = 0; i < kTablesPerSlot; ++i) {
    if (built_from(slot.tables[i], source, dc)) {
      slot.last_used[i] = table_uses_;
      return &slot.tables[i];
    }
    if (slot.last_used[i] < slot.last_used[victim]) victim = i;
  }
  // A table of this scan is never the victim: each slot holds one table per scan, and the
  // slot's entries are only looked at once per scan.
  slot.last_used[victim] = table_uses_;
  if (!build_table(source, dc, slot.tables[victim])) return nullptr;
  ++tables_built_;
  return &slot.tables[victim];
}

bool HuffmanDecoder::runs_here() { return SLIP_JPEG_INTERNALS && kHaveBmi2 && active_simd_level() >= SimdLevel::avx2; }

bool HuffmanDecoder::attach(jpeg_decompress_struct& cinfo) {
#if SLIP_JPEG_INTERNALS
  if (!runs_here()) return false;  // no BMI2, or below avx2: libjpeg's own decoder
  if (cinfo.progressive_mode || cinfo.arith_code || cinfo.buffered_image || cinfo.inputctl == nullptr ||
      cinfo.inputctl->has_multiple_scans || cinfo.entropy == nullptr || cinfo.src == nullptr || cinfo.src->next_input_byte == nullptr)
    return false;
  if (cinfo.Ss != 0 || cinfo.Se != DCTSIZE2 - 1 || cinfo.Ah != 0 || cinfo.Al != 0) return false;
  if (cinfo.comps_in_scan < 1 || cinfo.comps_in_scan > MAX_COMPS_IN_SCAN || cinfo.blocks_in_MCU < 1 ||
      cinfo.blocks_in_MCU > D_MAX_BLOCKS_IN_MCU)
    return false;
  const Table* dc_tables[NUM_HUFF_TBLS] = {};
  const Table* ac_tables[NUM_HUFF_TBLS] = {};
  for (int ci = 0; ci < cinfo.comps_in_scan; ++ci) {
    const jpeg_component_info* comp = cinfo.cur_comp_info[ci];
    if (comp == nullptr || comp->dc_tbl_no < 0 || comp->dc_tbl_no >= NUM_HUFF_TBLS || comp->ac_tbl_no < 0 ||
        comp->ac_tbl_no >= NUM_HUFF_TBLS)
      return false;
    const JHUFF_TBL* dc = cinfo.dc_huff_tbl_ptrs[comp->dc_tbl_no];
    const JHUFF_TBL* ac = cinfo.ac_huff_tbl_ptrs[comp->ac_tbl_no];
    if (dc == nullptr || ac == nullptr) return false;
    const Table*& dc_table = dc_tables[comp->dc_tbl_no];
    const Table*& ac_table = ac_tables[comp->ac_tbl_no];
    if (dc_table == nullptr) dc_table = table_for(slots_->dc[comp->dc_tbl_no], *dc, true);
    if (ac_table == nullptr) ac_table = table_for(slots_->ac[comp->ac_tbl_no], *ac, false);
    if (dc_table == nullptr || ac_table == nullptr) return false;
  }
  blocks_ = cinfo.blocks_in_MCU;
  for (int b = 0; b < blocks_; ++b) {
    const int ci = cinfo.MCU_membership[b];
    if (ci < 0 || ci >= cinfo.comps_in_scan) return false;
    block_component_[b] = ci;
    block_dc_[b] = dc_tables[cinfo.cur_comp_info[ci]->dc_tbl_no];
    block_ac_[b] = ac_tables[cinfo.cur_comp_info[ci]->ac_tbl_no];
  }
  next_ = cinfo.src->next_input_byte;
  end_ = next_ + cinfo.src->bytes_in_buffer;
  bits_ = 0;
  count_ = padding_ = 0;
  at_marker_ = false;
  restarts_to_go_ = cinfo.restart_interval;
  next_restart_ = 0;
  mcu_column_ = 0;
  for (int32_t& dc : last_dc_) dc = 0;
  failed_ = false;
  cinfo_ = &cinfo;
  hook_->pub.start_pass = start_pass_hook;
  hook_->pub.decode_mcu = decode_mcu_hook;
  hook_->pub.insufficient_data = FALSE;
  hook_->self = this;
  cinfo.entropy = &hook_->pub;
  return true;
#else
  (void)cinfo;
  return false;
#endif
}

HuffmanDecoder& HuffmanDecoder::self_of(j_decompress_ptr cinfo) { return *reinterpret_cast<Hook*>(cinfo->entropy)->self; }

// Another scan after the only one: not a stream attach() took; stop.
void HuffmanDecoder::start_pass_hook(j_decompress_ptr cinfo) { self_of(cinfo).failed_ = true; }

boolean HuffmanDecoder::decode_mcu_hook(j_decompress_ptr cinfo, JBLOCKROW* blocks) {
  return self_of(cinfo).decode_mcu(blocks) ? TRUE : FALSE;
}

// Fills the bit buffer to more than 56 bits, or to the next marker (or the data's end), after
// which it shifts in zeros; a stuffed 0xFF 0x00 is one 0xFF byte.
void HuffmanDecoder::refill() {
  while (count_ <= 56 && !at_marker_) {
    if (append_plain_bytes(bits_, count_, next_, end_)) continue;
    if (next_ == end_) {
      failed_ = true;  // data ending without a marker: libjpeg warns (premature end of file)
      at_marker_ = true;
      break;
    }
    const uint8_t byte = *next_;
    if (byte == 0xFF) {
      if (end_ - next_ < 2 || next_[1] != 0x00) {
        at_marker_ = true;
        break;
      }
      next_ += 2;
    } else {
      ++next_;
    }
    bits_ |= static_cast<uint64_t>(byte) << (56 - count_);
    count_ += 8;
  }
  if (at_marker_ && count_ < 64) {
    padding_ += 64 - count_;
    count_ = 64;
  }
}

// libjpeg's process_restart, strictly: the interval's data ends within its last byte and the
// next marker is the expected RSTn.
bool HuffmanDecoder::restart() {
  if (!at_marker_) refill();
  if (!at_marker_ || failed_ || count_ - padding_ >= 8 || end_ - next_ < 2 || next_[1] != 0xD0 + next_restart_) return false;
  next_ += 2;
  bits_ = 0;
  count_ = padding_ = 0;
  at_marker_ = false;
  for (int32_t& dc : last_dc_) dc = 0;
  restarts_to_go_ = cinfo_->restart_interval;
  next_restart_ = (next_restart_ + 1) & 7;
  return true;
}

// libjpeg's bit reader fills its buffer to at least 57 bits whenever it fills (jdhuff.c), so
// it reads up to 64 bits past the last bit it decoded; these many data bytes cover that.
bool HuffmanDecoder::data_ends_within_lookahead() const {
  int bits = count_;  // past the last decoded bit, buffered
  for (const uint8_t* p = next_; bits < 8 * kLibjpegLookaheadBytes; bits += 8) {
    if (p == end_) return true;
    if (*p != 0xFF) {
      ++p;
      continue;
    }
    if (end_ - p < 2) return true;   // a 0xFF byte ending the data: libjpeg reads on for the next one
    if (p[1] != 0x00) return false;  // a marker: libjpeg stops there
    p += 2;
  }
  return false;
}

HuffmanDecoder::Reader HuffmanDecoder::refill(Reader r) {
  bits_ = r.bits, count_ = r.count, next_ = r.next;
  refill();
  return {bits_, count_, next_};
}

namespace {

// A code longer than the one-step lookahead, compared as F.16 does: its symbol and length, or
// symbol -1 for a code the table does not have.
struct LongCode {
  int symbol;
  int length;
};
__attribute__((noinline)) LongCode long_code(const HuffmanDecoder::Table& t, uint64_t bits) {
  for (int l = kLookahead + 1; l <= 16; ++l) {
    const auto code = static_cast<int32_t>(bits >> (64 - l));
    if (code <= t.max_code[l]) return {t.symbols[code + t.value_offset[l]], l};
  }
  return {-1, 0};
}

}  // namespace

// The hot loop keeps the reader in locals whose address never escapes (the slow paths take
// and return values), so they stay in registers: one table load and one shift per common
// symbol on the chain from one code to the next.
#if defined(__x86_64__)
// NOLINTNEXTLINE(readability-function-size): the hot loop stays whole so its state stays in registers
__attribute__((target("bmi2"))) bool HuffmanDecoder::decode_mcu(JBLOCKROW* blocks) {
#else
// NOLINTNEXTLINE(readability-function-size): the hot loop stays whole so its state stays in registers
bool HuffmanDecoder::decode_mcu(JBLOCKROW* blocks) {  // not attached off x86-64 (cpu_has_bmi2() is false)
#endif
  if (failed_) return false;
  if (cinfo_->restart_interval && restarts_to_go_ == 0 && !restart()) {
    failed_ = true;
    return false;
  }
  // fill() leaves at least kFillTo bits (or the zeros past a marker): more than a long code and
  // its magnitude bits (31), and several one-step entries.
  constexpr int kFillTo = 33;
  Reader r{bits_, count_, next_};
  bool at_marker = at_marker_;
  auto fill = [&] {
    if (r.count >= kFillTo) [[likely]]
      return;
    if (!at_marker && append_plain_bytes(r.bits, r.count, r.next, end_)) return;
    r = refill(r);
    at_marker = at_marker_;
  };
  auto take_bits = [&](int n) {
    const auto value = static_cast<uint32_t>(r.bits >> (64 - n));
    r.bits <<= n;
    r.count -= n;
    return value;
  };
  // One symbol: the one-step table, then longer codes; -1 for a code the table does not have.
  auto symbol_of = [&](const Table& t) -> int {
    if (const uint16_t fast = t.fast[r.bits >> (64 - kLookahead)]; fast) {
      take_bits(fast >> 8);
      return fast & 0xFF;
    }
    const LongCode code = long_code(t, r.bits);
    if (code.symbol >= 0) take_bits(code.length);
    return code.symbol;
  };
  // A one-step entry: its low 6 bits are its length, the shift count as it stands.
  auto take_entry = [&](int32_t entry) {
    r.bits <<= (static_cast<unsigned>(entry) & 63);
    r.count -= entry & 63;
  };
  // kStore false: the MCU is decoded only to get past it (no blocks, or columns libjpeg will
  // not transform: rows above a crop, columns beside it), so no coefficient is written.
  auto decode_blocks = [&]<bool kStore>(JBLOCKROW* out) -> bool {
    for (int b = 0; b < blocks_; ++b) {
      JCOEF* block = kStore ? out[b][0] : nullptr;
      fill();
      const Table& dc = *block_dc_[b];
      int32_t diff = 0;
      if (const int32_t fast = dc.fast_value[r.bits >> (64 - kLookahead)]; fast) {
        take_entry(fast);
        diff = fast >> 16;
      } else {
        const int dc_size = symbol_of(dc);
        if (dc_size < 0) return false;
        diff = dc_size ? extend(take_bits(dc_size), dc_size) : 0;
      }
      // libjpeg's sum in int, wrapping on corrupt streams, then truncated to JCOEF.
      int32_t& last = last_dc_[block_component_[b]];
      last = static_cast<int32_t>(static_cast<uint32_t>(last) + static_cast<uint32_t>(diff));
      if constexpr (kStore) block[0] = static_cast<JCOEF>(last);
      const Table& ac = *block_ac_[b];
      // One AC symbol at coefficient k: 1 at the end of the block, -1 for a bad code, else 0.
      // A one-step entry uses at most kLookahead bits; a longer code and its magnitude bits at
      // most 31, so the slow path refills first.
      ptrdiff_t k = 1;
      auto step = [&]() -> int {
        const uint64_t entry = ac.pair[r.bits >> (64 - kLookahead)];
        if (entry) [[likely]] {
          const uint64_t before = r.bits;
          r.bits <<= (entry & 63);
          r.count -= static_cast<int>(entry & 63);
          // The first symbol at k1, the second (if any) at k2. The second's store comes first:
          // when there is none, or the block ends with the first, it lands on the first's
          // position (the tail of kNaturalOrder) or on a position still 0, and the first's
          // value overwrites it.
          const ptrdiff_t k1 = k + static_cast<ptrdiff_t>((entry >> 16) & 15);
          const ptrdiff_t k2 = k1 + 1 + static_cast<ptrdiff_t>((entry >> 20) & 15);
          if constexpr (kStore) {
            block[kNaturalOrder[k2]] = static_cast<JCOEF>(entry >> 48);
            block[kNaturalOrder[k1]] = static_cast<JCOEF>(entry >> 32);
          }
          if (k1 >= DCTSIZE2 - 1) [[unlikely]] {
            // The first symbol filled the block: a second one belongs to the next block.
            if (entry & kPairHasSecond) {
              const int first_length = ac.fast_value[before >> (64 - kLookahead)] & 63;
              r.bits = before << first_length;
              r.count += static_cast<int>(entry & 63) - first_length;
            }
            return 1;
          }
          k = k2 + ((entry & kPairHasSecond) != 0 ? 1 : 0);
          return (entry & kPairEndsBlock) || k >= DCTSIZE2 ? 1 : 0;
        }
        fill();
        const int symbol = symbol_of(ac);
        if (symbol < 0) return -1;
        const int run = symbol >> 4, size = symbol & 15;
        if (size) {
          k += run;
          const auto value = static_cast<JCOEF>(extend(take_bits(size), size));
          if constexpr (kStore) block[kNaturalOrder[k]] = value;
        } else {
          if (run != 15) return 1;
          k += 15;
        }
        fill();  // the next step may be a one-step entry without a check
        return ++k < DCTSIZE2 ? 0 : 1;
      };
      // Three symbols per refill check (the check's outcome is the loop's least predictable
      // branch): after two one-step entries, at least kFillTo - 2 kLookahead bits remain,
      // enough for a third. Four per check, with kFillTo 40, measured no faster.
      static_assert(kFillTo - 2 * kLookahead >= kLookahead);
      for (;;) {
        fill();
        int done = step();
        if (done == 0) done = step();
        if (done == 0) done = step();
        if (done < 0) return false;
        if (done) break;
      }
    }
    return true;
  };
  // Where this MCU lies in its row, against the columns libjpeg transforms (which the region
  // decoder changes from band to band).
  bool transformed = blocks != nullptr;
#if SLIP_JPEG_INTERNALS
  transformed = transformed && mcu_column_ >= cinfo_->master->first_iMCU_col && mcu_column_ <= cinfo_->master->last_iMCU_col;
#endif
  if (++mcu_column_ >= cinfo_->MCUs_per_row) mcu_column_ = 0;
  const bool ok = transformed ? decode_blocks.template operator()<true>(blocks) : decode_blocks.template operator()<false>(nullptr);
  bits_ = r.bits, count_ = r.count, next_ = r.next;
  // Bits past a marker were needed: libjpeg warns (premature end of data segment).
  if (!ok || count_ < padding_) failed_ = true;
  // The data ends, without a marker, close enough that libjpeg's reader may reach the end
  // (premature end of file) though the MCU did not need those bits.
  if (!at_marker_ && end_ - next_ < 2 * kLibjpegLookaheadBytes && data_ends_within_lookahead()) [[unlikely]]
    failed_ = true;
  if (failed_) return false;
  if (cinfo_->restart_interval) --restarts_to_go_;
  cinfo_->src->next_input_byte = next_;
  cinfo_->src->bytes_in_buffer = static_cast<size_t>(end_ - next_);
  return true;
}

}  // namespace slip::detail
