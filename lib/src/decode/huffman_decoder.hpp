// slip's own Huffman decoder for sequential JPEG scans, put in place of libjpeg's inside a
// libjpeg decompression (its entropy module's decode_mcu), so libjpeg still does everything
// else: markers, the IDCT, the planes. Why: entropy decoding is half of a crop's time, and
// libjpeg-turbo 2.1 drops to its slow decoder whenever a JPEG has restart markers, which are
// what lets the engine skip the rows and columns outside a crop (restart_cut.hpp).
//
// It gives libjpeg's coefficients exactly on any stream it accepts, and it accepts less: a bad
// code, data running into a marker or the end, a restart marker out of sequence or not right
// after its interval, fill bytes, all stop the decode (decode_mcu suspends, so the read returns
// nothing) with failed() set; the caller then decodes the image again with libjpeg's own
// decoder, whose verdict and coefficients stand.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>  // jpeglib.h needs FILE
#include <memory>

#include <jpeglib.h>

namespace slip::detail {

class HuffmanDecoder {
 public:
  HuffmanDecoder();
  ~HuffmanDecoder();
  HuffmanDecoder(const HuffmanDecoder&) = delete;  // libjpeg holds a pointer into it
  HuffmanDecoder& operator=(const HuffmanDecoder&) = delete;

  // Right after jpeg_start_decompress on a memory source: takes over the entropy decoding of
  // cinfo's scan when it is the image's only one, sequential and Huffman-coded (any component
  // count in the scan, any restart interval). False, with cinfo untouched, otherwise or when
  // this build cannot reach libjpeg's internals. `this` must outlive the decompression.
  bool attach(jpeg_decompress_struct& cinfo);
  // Whether attach() can take a stream on this machine at the SIMD level in use: it needs BMI2
  // (x86-64) and the avx2 level or above; elsewhere libjpeg's own decoder runs.
  static bool runs_here();
  // True once a decode_mcu refused the stream (see above).
  bool failed() const { return failed_; }

  // The largest lookahead of the one-step tables (bits).
  static constexpr int kLookaheadBits = 11;

  struct Table {
    // Codes up to kLookaheadBits long: (length << 8) | symbol, 0 for a longer code.
    uint16_t fast[1 << kLookaheadBits];
    // Code and magnitude bits together when they fit the lookahead (the common small
    // coefficients and DC differences): value << 16 | run << 8 | total length, else 0; an AC
    // table's size-0 symbols too: ZRL as run 15, value 0, and the others (the end of block)
    // with bit 12 set. The length sits alone in the low 6 bits, so the entry itself is the
    // shift count (x86 masks it to 6 bits): no masking on the dependency chain from one code
    // to the next.
    int32_t fast_value[1 << kLookaheadBits];
    // AC tables: up to two symbols (code and magnitude bits each) that fit the lookahead
    // together, so one lookup on the chain from one code to the next often yields two
    // coefficients. 0: the first code is longer or its bits do not fit (the slow path). Else:
    //   bits 0-5 all bits taken, 16-19 the first symbol's zero run, 20-23 the second's,
    //   24 a second symbol is there, 25 the block ends here (an end of block in the entry),
    //   32-47 the first value, 48-63 the second (0 for a zero run of 16, an end of block, or
    //   no second symbol: stores of 0 where the block is still 0 change nothing).
    uint64_t pair[1 << kLookaheadBits];
    // Longer codes, canonical: a code of length l is valid iff code <= max_code[l], its symbol
    // symbols[code + value_offset[l]].
    int32_t max_code[18];
    int32_t value_offset[17];
    uint8_t symbols[256];
    // The JPEG table these were built from (code counts per length, then the symbols): a later
    // image's identical table (most JPEGs carry the standard ones) is not built again.
    bool built = false, built_dc = false;
    uint8_t built_from[17 + 256];
  };

  // Tables built since construction (a table found already built does not count).
  size_t tables_built() const { return tables_built_; }
  // Built tables kept per JPEG table slot (DC or AC, 0-3), least recently used replaced: the
  // standard tables of most ImageNet JPEGs stay built through the images that carry their own
  // (with one per slot, about half of the standard-table images rebuilt them in a shuffled epoch).
  static constexpr int kTablesPerSlot = 4;

 private:
  struct Hook;
  static HuffmanDecoder& self_of(j_decompress_ptr cinfo);
  static boolean decode_mcu_hook(j_decompress_ptr cinfo, JBLOCKROW* blocks);
  static void start_pass_hook(j_decompress_ptr cinfo);
  bool decode_mcu(JBLOCKROW* blocks);
  bool restart();
  void refill();
  // libjpeg reads at most 64 bits ahead of its decoding; this many whole bytes cover that.
  static constexpr int kLibjpegLookaheadBytes = 10;
  // True when the data ends, without a marker, within kLibjpegLookaheadBytes data bytes of
  // the next bit to decode: libjpeg's reader may have reached the end there and warned.
  bool data_ends_within_lookahead() const;
  // The bit reader as decode_mcu keeps it in registers; the slow paths take and return it.
  struct Reader {
    uint64_t bits;
    int count;
    const uint8_t* next;
  };
  Reader refill(Reader r);

  jpeg_decompress_struct* cinfo_ = nullptr;
  bool failed_ = false;
  // The bit reader over the scan's bytes: `bits_` holds `count_` bits, most significant first.
  // After a marker (or the data's end) it shifts in zeros, `padding_` of them still buffered.
  const uint8_t* next_ = nullptr;
  const uint8_t* end_ = nullptr;
  uint64_t bits_ = 0;
  int count_ = 0;
  int padding_ = 0;
  bool at_marker_ = false;
  // Scan state as libjpeg keeps it.
  unsigned restarts_to_go_ = 0;
  JDIMENSION mcu_column_ = 0;  // of the next MCU in its MCU row
  unsigned next_restart_ = 0;
  int32_t last_dc_[4] = {};
  // Per block of the MCU: its component's index in the scan and tables.
  int blocks_ = 0;
  int block_component_[D_MAX_BLOCKS_IN_MCU] = {};
  const Table* block_dc_[D_MAX_BLOCKS_IN_MCU] = {};
  const Table* block_ac_[D_MAX_BLOCKS_IN_MCU] = {};
  struct Slot {
    Table tables[kTablesPerSlot];
    uint64_t last_used[kTablesPerSlot] = {};
  };
  // The slot's table built from `source` (built now, in place of the least recently used,
  // unless it is there); nullptr for a table libjpeg would refuse.
  const Table* table_for(Slot& slot, const JHUFF_TBL& source, bool dc);
  // On the heap (about 0.5 MB): a decoder may live on a thread's stack.
  struct Slots {
    Slot dc[NUM_HUFF_TBLS], ac[NUM_HUFF_TBLS];
  };
  std::unique_ptr<Slots> slots_;
  uint64_t table_uses_ = 0;
  size_t tables_built_ = 0;
  // What libjpeg calls: its own entropy struct, then a pointer back here (huffman_decoder.cpp).
  std::unique_ptr<Hook> hook_;
};

}  // namespace slip::detail
