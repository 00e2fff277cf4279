// slip/slip.hpp is the whole public API: this file includes nothing else of slip's and must
// still name every public entry point (a header left out of slip.hpp fails to compile here).
#include "slip/slip.hpp"

#include <gtest/gtest.h>

#include <type_traits>

TEST(PublicApi, OneIncludeNamesEveryHeadersTypes) {
  EXPECT_TRUE(std::is_class_v<slip::BatchDecoder>);         // decode.hpp
  EXPECT_TRUE(std::is_class_v<slip::DecodeOptions>);        // decode.hpp
  EXPECT_TRUE(std::is_class_v<slip::Pipeline>);             // pipelines.hpp
  EXPECT_TRUE(std::is_class_v<slip::TransportOptions>);     // transport.hpp
  EXPECT_TRUE(std::is_class_v<slip::EnvironmentVariable>);  // environment.hpp
  EXPECT_TRUE(std::is_class_v<slip::Yuv420Image>);          // yuv420_image.hpp
  EXPECT_TRUE(std::is_class_v<slip::MergeOptions>);         // merge.hpp
  EXPECT_TRUE(std::is_class_v<slip::RemoteOptions>);        // remote.hpp
  EXPECT_TRUE(std::is_class_v<slip::Cache>);                // cache.hpp
  EXPECT_TRUE(std::is_class_v<slip::CacheSummary>);         // inspect.hpp
  EXPECT_TRUE(std::is_class_v<slip::VerifyOptions>);        // verify.hpp
  EXPECT_TRUE(std::is_class_v<slip::SiblingOptions>);       // yuv420.hpp
  EXPECT_TRUE(std::is_class_v<slip::EpochOrder>);           // shuffle.hpp
  EXPECT_TRUE(std::is_class_v<slip::ConvertOptions>);       // convert.hpp
  EXPECT_TRUE(std::is_class_v<slip::CancelToken>);          // runtime.hpp
  EXPECT_TRUE(std::is_class_v<slip::ProgressUpdate>);       // source.hpp
  EXPECT_TRUE(std::is_class_v<slip::Loader>);               // loader.hpp
  EXPECT_TRUE(std::is_class_v<slip::Dataset>);              // dataset.hpp
  EXPECT_TRUE(std::is_class_v<slip::MixedOrder>);           // mix.hpp
  EXPECT_TRUE(std::is_class_v<slip::StagedCache>);          // stage.hpp
  EXPECT_NE(&slip::merge_parts, nullptr);
  EXPECT_NE(&slip::parse_crop_groups, nullptr);
}
