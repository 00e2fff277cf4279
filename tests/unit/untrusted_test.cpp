// The one name rule, terminal escaping and bounded JSON parsing (util/untrusted.hpp).
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "format/layout.hpp"
#include "slip/error.hpp"
#include "slip/index.hpp"
#include "slip/yuv420.hpp"
#include "util/untrusted.hpp"

namespace slip::detail {
namespace {

TEST(Utf8, AcceptsWellFormedRejectsOverlongsSurrogatesAndTruncation) {
  EXPECT_TRUE(is_valid_utf8("plain"));
  EXPECT_TRUE(is_valid_utf8("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80"));
  EXPECT_FALSE(is_valid_utf8("\xc0\xaf"));          // overlong '/'
  EXPECT_FALSE(is_valid_utf8("\xed\xa0\x80"));      // surrogate
  EXPECT_FALSE(is_valid_utf8("\xf4\x90\x80\x80"));  // > U+10FFFF
  EXPECT_FALSE(is_valid_utf8("\xe2\x82"));          // truncated
  EXPECT_FALSE(is_valid_utf8("\xff"));
}

TEST(Utf8, InvalidAtNamesTheFirstBadByte) {
  EXPECT_EQ(invalid_utf8_at("plain caf\xc3\xa9"), std::nullopt);
  EXPECT_EQ(invalid_utf8_at("caf\xe9!"), 3u);
  EXPECT_EQ(invalid_utf8_at("ok\xc3\xa9\xed\xa0\x80"), 4u);  // a surrogate after a good sequence
  EXPECT_EQ(invalid_utf8_at("\xe2\x82"), 0u);
}

// One naming function (format/layout.hpp): every name a writer uses is one of field_files().
TEST(FieldFiles, EveryWriterUsesTheOneNamingFunction) {
  auto names = [](std::string_view f, FieldType t) {
    std::set<std::string> out;
    for (const FieldFile& file : field_files(f, t)) out.insert(file.name);
    return out;
  };
  const auto image = names("image", FieldType::image);
  for (const std::string& n : storage_files("image", FieldType::image)) EXPECT_TRUE(image.count(n)) << n;
  EXPECT_TRUE(image.count(checksum_file("image")));
  for (const std::string& n : yuv420_sibling_files("image")) EXPECT_TRUE(image.count(n)) << n;
  EXPECT_EQ(image, (std::set<std::string>{"image.bin", "image.meta.npy", "image.xxh3.npy", "image_yuv420.bin", "image_yuv420.meta.npy"}));
  for (FieldType t : {FieldType::int64, FieldType::float64, FieldType::str, FieldType::bytes, FieldType::ndarray}) {
    const auto got = names("label", t);
    for (const std::string& n : storage_files("label", t)) EXPECT_TRUE(got.count(n)) << n;
    EXPECT_TRUE(got.count(pickled_index_name("label")));
    for (const std::string& n : csr_index_names("label")) EXPECT_TRUE(got.count(n)) << n;
  }
}

FieldSpec spec(std::string name, FieldType type) {
  FieldSpec f;
  f.name = std::move(name);
  f.type = type;
  return f;
}

TEST(FieldFiles, FieldsWhoseFilesCoincideNowOrLaterAreRefused) {
  auto refused = [](std::vector<FieldSpec> fields, const std::string& want) {
    Schema schema;
    schema.fields = std::move(fields);
    try {
      check_schema_names(schema, "tar");
      ADD_FAILURE() << "accepted: " << want;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), Errc::bad_input);
      EXPECT_NE(e.message().find(want), std::string::npos) << e.message();
    }
  };
  const FieldSpec image = spec("image", FieldType::image), yuv_meta = spec("image_yuv420.meta", FieldType::int64);
  // After `slip yuv420`, image's sibling records would overwrite the int field (in either order).
  refused({image, yuv_meta},
          "fields \"image\" and \"image_yuv420.meta\" would share the file image_yuv420.meta.npy (\"image\"'s YUV420 sibling "
          "records, \"image_yuv420.meta\"'s array)");
  refused({yuv_meta, image}, "would share the file image_yuv420.meta.npy");
  refused({spec("x", FieldType::bytes), spec("x.meta", FieldType::float64)}, "would share the file x.meta.npy");
  refused({spec("x", FieldType::bytes), spec("x.xxh3", FieldType::int64)}, "would share the file x.xxh3.npy");
  refused({spec("t", FieldType::str), spec("t.offsets", FieldType::ndarray)}, "would share the file t.offsets.npy");
  refused({spec("label", FieldType::int64), spec("label_index", FieldType::int64)}, "reserved");  // the Python loader's glob
  // What never meets: siblings belong to image fields, indexes to the others.
  Schema ok;
  ok.fields = {image,
               spec("label", FieldType::int64),
               spec("index", FieldType::int64),
               spec("path", FieldType::str),
               spec("meta.width", FieldType::int64),
               spec("x", FieldType::int64),
               spec("x_yuv420.meta", FieldType::int64),
               spec("image.bin", FieldType::str),
               spec("manifest.json", FieldType::int64)};
  EXPECT_NO_THROW(check_schema_names(ok, "tar"));
}

TEST(EscapeForTerminal, ControlsAndInvalidBytesBecomeVisible) {
  EXPECT_EQ(escape_for_terminal("a\x1b]0;owned\x07z"), "a\\x1b]0;owned\\x07z");
  EXPECT_EQ(escape_for_terminal("line\nslip: info: fake"), "line\\nslip: info: fake");
  EXPECT_EQ(escape_for_terminal("back\\slash\t\r"), "back\\slash\\t\\r");
  const std::string once = escape_for_terminal("\x1b[2J\n\xff");
  EXPECT_EQ(escape_for_terminal(once), once);  // idempotent
  EXPECT_EQ(escape_for_terminal("\xff\xfe"), "\\xff\\xfe");
  EXPECT_EQ(escape_for_terminal("\xc2\x9b"
                                "2J"),
            "\\xc2\\x9b2J");                                     // C1 CSI
  EXPECT_EQ(escape_for_terminal("caf\xc3\xa9"), "caf\xc3\xa9");  // printable UTF-8 unchanged
  EXPECT_EQ(escape_for_terminal(std::string("a\0b", 3)), "a\\x00b");
}

TEST(FileStem, OneRuleForEveryName) {
  for (const char* ok : {"image", "label", "meta.width", "0", "caf\xc3\xa9", "a-b_c"}) EXPECT_EQ(file_stem_problem(ok), "") << ok;
  for (std::string bad : {std::string(""), std::string("."), std::string(".."), std::string("../../x"), std::string("/tmp/x"),
                          std::string(".hidden"), std::string("a\\b"), std::string("a\nb"), std::string("a\x1b[2J"), std::string("\xff"),
                          std::string("x\0y", 3), std::string(201, 'a')})
    EXPECT_NE(file_stem_problem(bad), "") << escape_for_terminal(bad);
  EXPECT_EQ(file_stem_problem(std::string(200, 'a')), "");
}

TEST(ReservedNames, SlipOwnFilesCannotBeFieldNames) {
  for (const char* bad : {"manifest", "image_yuv420", "label_index", "label.index.keys", "label.index"})
    EXPECT_NE(reserved_name_problem(bad), "") << bad;
  for (const char* ok : {"image", "index", "yuv420", "indexes", "label_indexes"}) EXPECT_EQ(reserved_name_problem(ok), "") << ok;
}

TEST(CheckFieldName, ThrowsBadInputWithTheNameEscaped) {
  try {
    check_field_name("../\x1b[2Jx", "FFCV field name");
    FAIL() << "no throw";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Errc::bad_input);
    EXPECT_NE(e.message().find("FFCV field name \"../\\x1b[2Jx\""), std::string::npos) << e.message();
    EXPECT_EQ(e.message().find('\x1b'), std::string::npos);
  }
  EXPECT_NO_THROW(check_field_name("image", "x"));
}

TEST(BoundedJson, DeepNestingIsBadInputNotAStackOverflow) {
  const std::string deep = std::string(50000, '[') + std::string(50000, ']');
  try {
    (void)parse_json_bounded(deep);
    FAIL() << "no throw";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Errc::bad_input);
  }
  EXPECT_THROW((void)parse_ordered_json_bounded(std::string(50000, '{')), Error);
  const std::string ok64 = std::string(64, '[') + std::string(64, ']');
  EXPECT_NO_THROW((void)parse_json_bounded(ok64));
  EXPECT_THROW((void)parse_json_bounded("[" + ok64 + "]"), Error);
  // Brackets inside strings do not count.
  EXPECT_EQ(parse_json_bounded(R"({"k": "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[["})")["k"]
                .get<std::string>()
                .size(),
            72u);
  EXPECT_THROW((void)parse_json_bounded("{bad"), nlohmann::json::parse_error);
}

}  // namespace
}  // namespace slip::detail
