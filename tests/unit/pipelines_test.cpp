// The one registry of named pipelines (slip/pipelines.hpp), the environment table, and the
// behaviour switches that are option fields first (ConvertOptions::parallel_writes).
#include <gtest/gtest.h>
#include <stdlib.h>

#include <set>
#include <string>

#include "slip/convert.hpp"
#include "slip/environment.hpp"
#include "slip/error.hpp"
#include "slip/pipelines.hpp"
#include "slip/source.hpp"
#include "test_support.hpp"

namespace slip {
namespace {

TEST(Pipelines, RegistryNamesAreUniqueAndEachHasHelp) {
  std::set<std::string> names;
  for (const Pipeline& p : pipelines()) {
    EXPECT_TRUE(names.insert(std::string(p.name)).second) << p.name << " twice";
    EXPECT_FALSE(p.help.empty()) << p.name;
    EXPECT_EQ(find_pipeline(p.name), &p);
  }
  EXPECT_EQ(names, (std::set<std::string>{"raw", "decode", "center", "rrc", "direct-rrc", "multicrop"}));
  EXPECT_EQ(pipeline_names(), "raw, decode, center, rrc, direct-rrc, multicrop");
  EXPECT_EQ(pipeline_names("|", true), "decode|center|rrc|direct-rrc|multicrop");  // raw is bench's only
  EXPECT_EQ(find_pipeline("RRC"), nullptr);
}

TEST(Pipelines, CropGroupsComeFromTheRegistry) {
  const auto center = pipeline_crop_groups("center");
  ASSERT_EQ(center.size(), 1u);
  EXPECT_EQ(center[0].sampler, CropSampler::center);
  EXPECT_DOUBLE_EQ(center[0].center_ratio, 224.0 / 256.0);  // torchvision's Resize(256) + CenterCrop(224)
  EXPECT_EQ(center[0].size, 224u);
  EXPECT_EQ(pipeline_crop_groups("rrc")[0].sampler, CropSampler::rrc);
  EXPECT_EQ(pipeline_crop_groups("direct-rrc")[0].sampler, CropSampler::direct_rrc);
  EXPECT_EQ(pipeline_crop_groups("decode")[0].sampler, CropSampler::full);
  const auto dino = pipeline_crop_groups("multicrop");
  ASSERT_EQ(dino.size(), 2u);
  EXPECT_EQ(dino[0].count, 2u);
  EXPECT_EQ(dino[1].count, 8u);
  EXPECT_EQ(dino[1].size, 96u);
  EXPECT_TRUE(find_pipeline("rrc")->takes_scale_ratio);
  EXPECT_FALSE(find_pipeline("center")->takes_scale_ratio);
}

TEST(Pipelines, UnknownNameAndRawAreUsageErrorsNamingTheChoices) {
  try {
    pipeline_crop_groups("rrc2");
    FAIL() << "an unknown pipeline was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Errc::usage);
    EXPECT_NE(std::string(e.what()).find("raw, decode, center, rrc, direct-rrc, multicrop"), std::string::npos) << e.what();
  }
  EXPECT_THROW(pipeline_crop_groups("raw"), Error);
}

TEST(Environment, TableNamesTheSwitchesAndEachRowIsComplete) {
  std::set<std::string> names;
  for (const EnvironmentVariable& v : environment_variables()) {
    EXPECT_FALSE(v.values.empty()) << v.names;
    EXPECT_FALSE(v.what.empty()) << v.names;
    EXPECT_FALSE(v.default_value.empty()) << v.names;
    names.insert(std::string(v.names));
  }
  for (const char* n :
       {"SLIP_PARALLEL_WRITES", "SLIP_JPEG_INTERNALS", "SLIP_SIMD", "SLIPSTREAM_CACHE_DIR", "SOURCE_DATE_EPOCH", "NO_COLOR"})
    EXPECT_TRUE(names.count(n)) << n << " is not in the table";
}

// SLIP_PARALLEL_WRITES is the slip command's business: the library takes the option field and
// never reads the variable (before, convert() read it from the process environment).
TEST(ConvertOptionsTest, ParallelWritesIsAnOptionTheLibraryNeverReadsFromTheEnvironment) {
  test::TempDir tmp;
  ::setenv("SLIP_PARALLEL_WRITES", "1", 1);
  const auto convert_with = [&](bool parallel, unsigned threads, const char* dir) {
    auto src = open_source((std::filesystem::path(SLIP_SOURCE_DIR) / "examples/sample").string());
    ConvertOptions opt;
    opt.output_dir = tmp.path() / dir;
    opt.threads = threads;
    opt.parallel_writes = parallel;
    opt.created = 1700000000;
    return convert(*src, opt);
  };
  const ConvertResult off = convert_with(false, kParallelWriteThreads, "off");
  const ConvertResult on = convert_with(true, kParallelWriteThreads, "on");
  const ConvertResult few = convert_with(true, 2, "few");
  ::unsetenv("SLIP_PARALLEL_WRITES");
  EXPECT_FALSE(off.parallel_writes) << "convert() read SLIP_PARALLEL_WRITES from the environment";
  EXPECT_TRUE(on.parallel_writes);
  EXPECT_FALSE(few.parallel_writes) << "below kParallelWriteThreads the writer thread writes";
  EXPECT_EQ(test::read_file(off.cache_path / "image.bin"), test::read_file(on.cache_path / "image.bin"));
  EXPECT_EQ(off.content_id, on.content_id);
}

}  // namespace
}  // namespace slip
