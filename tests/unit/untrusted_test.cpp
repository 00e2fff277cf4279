// The one name rule, terminal escaping and bounded JSON parsing (util/untrusted.hpp).
#include <gtest/gtest.h>

#include <string>

#include "slip/error.hpp"
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
