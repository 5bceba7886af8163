// runtime/: the child-process runner (ok, error, crash, timeout), the compile cache (key, miss,
// hit, unwritable directory) and the honest no-driver path.
#include "prism/runtime/runtime.h"

#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "prism/codegen/nvrtc.h"
#include "testing/status_matchers.h"

namespace prism::runtime {
namespace {
using ::prism::testing::StatusIs;
using ::testing::HasSubstr;
using ::testing::StartsWith;

struct ChildCase {
  const char* name;
  std::function<absl::StatusOr<std::string>()> fn;
  ChildResult::Kind kind;
  std::string payload;
  std::string message;  // a prefix
  absl::Duration timeout = absl::Seconds(60);
};

TEST(RunInChildTest, RecordsEveryOutcomeWithoutFailingTheParent) {
  const ChildCase cases[] = {
      {"ok", [] { return absl::StatusOr<std::string>("hello"); }, ChildResult::Kind::kOk, "hello",
       ""},
      {"ok empty", [] { return absl::StatusOr<std::string>(""); }, ChildResult::Kind::kOk, "", ""},
      {"large payload", [] { return absl::StatusOr<std::string>(std::string(1 << 20, 'x')); },
       ChildResult::Kind::kOk, std::string(1 << 20, 'x'), ""},
      {"error", [] { return absl::StatusOr<std::string>(absl::NotFoundError("no such thing")); },
       ChildResult::Kind::kFailed, "", "no such thing"},
      {"abort", []() -> absl::StatusOr<std::string> { std::abort(); }, ChildResult::Kind::kCrashed,
       "", "killed by signal 6"},
      {"exit without result", []() -> absl::StatusOr<std::string> { _exit(3); },
       ChildResult::Kind::kCrashed, "", "exited with status 3 without a result"},
      {"hang",
       []() -> absl::StatusOr<std::string> {
         std::this_thread::sleep_for(std::chrono::seconds(30));
         return std::string("late");
       },
       ChildResult::Kind::kTimedOut, "", "timed out after 300ms", absl::Milliseconds(300)},
  };
  for (const ChildCase& c : cases) {
    SCOPED_TRACE(c.name);
    ASSERT_OK_AND_ASSIGN(ChildResult r, RunInChild(c.fn, c.timeout));
    EXPECT_EQ(r.kind, c.kind) << ChildResultKindName(r.kind) << ": " << r.message;
    EXPECT_EQ(r.payload, c.payload);
    EXPECT_THAT(r.message, StartsWith(c.message));
    if (c.kind == ChildResult::Kind::kFailed) {
      EXPECT_EQ(r.code, absl::StatusCode::kNotFound);
    }
  }
}

TEST(CompileCacheTest, KeyMissHitAndErrors) {
  const std::string k = CompileCache::Key("src", 90, "13.0");
  EXPECT_EQ(k.size(), 16u);
  EXPECT_EQ(k, CompileCache::Key("src", 90, "13.0"));
  EXPECT_NE(k, CompileCache::Key("src", 80, "13.0"));
  EXPECT_NE(k, CompileCache::Key("src", 90, "12.9"));
  EXPECT_NE(k, CompileCache::Key("src2", 90, "13.0"));

  const std::string dir = ::testing::TempDir() + "/prism_cc_" + std::to_string(getpid());
  std::filesystem::remove_all(dir);
  CompileCache cache(dir);
  EXPECT_EQ(cache.Lookup(k), std::nullopt);
  ASSERT_OK(cache.Store(k, std::string("cu\0bin", 6)));
  EXPECT_EQ(cache.Lookup(k), std::string("cu\0bin", 6));
  EXPECT_EQ(cache.Lookup(CompileCache::Key("other", 90, "13.0")), std::nullopt);

  CompileCache disabled("");
  ASSERT_OK(disabled.Store(k, "x"));
  EXPECT_EQ(disabled.Lookup(k), std::nullopt);

  // A directory below a regular file cannot be created.
  const std::string file = dir + "/plain_file";
  std::ofstream(file) << "x";
  CompileCache bad(file + "/sub");
  EXPECT_THAT(bad.Store(k, "x"),
              StatusIs(absl::StatusCode::kInternal, HasSubstr("cannot write the compile cache '" +
                                                              file + "/sub/" + k + ".cubin'")));
  std::filesystem::remove_all(dir);
}

TEST(CompileCacheTest, CompileCachedHitsTheSecondTime) {
  if (!codegen::NvrtcAvailable()) GTEST_SKIP() << "built without NVRTC";
  const std::string dir = ::testing::TempDir() + "/prism_cc2_" + std::to_string(getpid());
  std::filesystem::remove_all(dir);
  CompileCache cache(dir);
  const std::string src = "extern \"C\" __global__ void k(float* p) { p[threadIdx.x] = 1.f; }\n";
  ASSERT_OK_AND_ASSIGN(CachedCompile a, CompileCached(cache, src, 90));
  EXPECT_FALSE(a.cache_hit);
  EXPECT_FALSE(a.cubin.empty());
  ASSERT_OK_AND_ASSIGN(CachedCompile b, CompileCached(cache, src, 90));
  EXPECT_TRUE(b.cache_hit);
  EXPECT_EQ(a.cubin, b.cubin);
  ASSERT_OK_AND_ASSIGN(CachedCompile c, CompileCached(cache, src, 80));
  EXPECT_FALSE(c.cache_hit);
  EXPECT_THAT(CompileCached(cache, "this is not CUDA", 90).status(),
              StatusIs(absl::StatusCode::kInvalidArgument, ::testing::_));
  std::filesystem::remove_all(dir);
}

TEST(CompileCacheTest, CompileInChildReturnsOneResultPerSource) {
  if (!codegen::NvrtcAvailable()) GTEST_SKIP() << "built without NVRTC";
  const std::string dir = ::testing::TempDir() + "/prism_cc3_" + std::to_string(getpid());
  std::filesystem::remove_all(dir);
  CompileCache cache(dir);
  const std::string good = "extern \"C\" __global__ void k(float* p) { p[0] = 2.f; }\n";
  ASSERT_OK_AND_ASSIGN(auto first, CompileInChild(cache, {good, "not CUDA"}, 90));
  ASSERT_EQ(first.size(), 2u);
  ASSERT_OK(first[0].status());
  EXPECT_FALSE(first[0]->cache_hit);
  EXPECT_FALSE(first[0]->cubin.empty());
  EXPECT_THAT(first[1].status(), StatusIs(absl::StatusCode::kInvalidArgument, ::testing::_));
  ASSERT_OK_AND_ASSIGN(auto second, CompileInChild(cache, {good}, 90));
  ASSERT_OK(second[0].status());
  EXPECT_TRUE(second[0]->cache_hit);  // stored by the first child
  EXPECT_EQ(second[0]->cubin, first[0]->cubin);
  std::filesystem::remove_all(dir);
}

TEST(NoDriverTest, EveryGpuCallIsUnavailable) {
  if (DriverLibraryPresent()) GTEST_SKIP() << "libcuda.so.1 is present here";
  EXPECT_THAT(QueryDevice(0).status(),
              StatusIs(absl::StatusCode::kUnavailable,
                       StartsWith("no CUDA driver: dlopen(\"libcuda.so.1\") failed (")));
  EXPECT_THAT(MeasureInChild(0, "", {}, BlockProgram{}, {}, {}).status(),
              StatusIs(absl::StatusCode::kUnavailable,
                       StartsWith("no CUDA driver: dlopen(\"libcuda.so.1\") failed (")));
}

}  // namespace
}  // namespace prism::runtime
