// runtime/: the child-process runner (ok, error, crash, timeout), the compile cache (key, miss,
// hit, unwritable directory) and the honest no-driver path.
#include "prism/runtime/runtime.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
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

// RunSequenceInChild: items run in order in one child until one fails, crashes or hangs; that
// item is recorded and a fresh child takes the next (item payloads carry the child's pid);
// should_start = false ends the sequence.
struct SequenceCase {
  const char* name;
  int bad;  // the item that misbehaves (-1: none)
  std::function<absl::StatusOr<std::string>()> misbehave;
  ChildResult::Kind kind;  // of item `bad`
  std::string message;     // of item `bad`, a prefix
  int stop_at = -1;        // should_start(i) is false from here
};

TEST(RunSequenceInChildTest, RecordsEachItemAndContinuesInAFreshChild) {
  const SequenceCase cases[] = {
      {"all ok", -1, nullptr, ChildResult::Kind::kOk, ""},
      {"error", 2, [] { return absl::StatusOr<std::string>(absl::NotFoundError("no such thing")); },
       ChildResult::Kind::kFailed, "no such thing"},
      {"abort", 1, []() -> absl::StatusOr<std::string> { std::abort(); },
       ChildResult::Kind::kCrashed, "killed by signal 6"},
      {"exit without result", 0, []() -> absl::StatusOr<std::string> { _exit(7); },
       ChildResult::Kind::kCrashed, "exited with status 7 without a result"},
      {"hang", 3,
       []() -> absl::StatusOr<std::string> {
         std::this_thread::sleep_for(std::chrono::seconds(30));
         return std::string("late");
       },
       ChildResult::Kind::kTimedOut, "timed out after 400ms"},
      {"stopped", -1, nullptr, ChildResult::Kind::kOk, "", /*stop_at=*/3},
      {"stopped at once", -1, nullptr, ChildResult::Kind::kOk, "", /*stop_at=*/0},
  };
  constexpr int kItems = 5;
  for (const SequenceCase& c : cases) {
    SCOPED_TRACE(c.name);
    auto fn = [&](int i) -> absl::StatusOr<std::string> {
      if (i == c.bad) return c.misbehave();
      return absl::StrCat("item ", i, " pid ", getpid());
    };
    auto start = [&](int i) { return c.stop_at < 0 || i < c.stop_at; };
    ASSERT_OK_AND_ASSIGN(std::vector<std::optional<ChildResult>> r,
                         RunSequenceInChild(kItems, fn, absl::Milliseconds(400), start));
    ASSERT_EQ(r.size(), static_cast<size_t>(kItems));
    std::string pid_before, pid_after;
    for (int i = 0; i < kItems; ++i) {
      SCOPED_TRACE(i);
      if (c.stop_at >= 0 && i >= c.stop_at) {
        EXPECT_FALSE(r[i].has_value());
        continue;
      }
      ASSERT_TRUE(r[i].has_value());
      if (i == c.bad) {
        EXPECT_EQ(r[i]->kind, c.kind) << ChildResultKindName(r[i]->kind) << ": " << r[i]->message;
        EXPECT_THAT(r[i]->message, StartsWith(c.message));
        if (c.kind == ChildResult::Kind::kFailed) {
          EXPECT_EQ(r[i]->code, absl::StatusCode::kNotFound);
        }
        continue;
      }
      EXPECT_EQ(r[i]->kind, ChildResult::Kind::kOk) << r[i]->message;
      EXPECT_THAT(r[i]->payload, StartsWith(absl::StrCat("item ", i, " pid ")));
      const std::string pid = r[i]->payload.substr(r[i]->payload.find("pid"));
      EXPECT_NE(pid, absl::StrCat("pid ", getpid())) << "ran in the parent";
      if (c.bad < 0 || i < c.bad) {
        if (pid_before.empty()) pid_before = pid;
        EXPECT_EQ(pid, pid_before) << "items before a fault share one child";
      } else {
        if (pid_after.empty()) pid_after = pid;
        EXPECT_EQ(pid, pid_after);
        EXPECT_NE(pid, pid_before) << "a fresh child after the fault";
      }
    }
  }
  ASSERT_OK_AND_ASSIGN(auto none, RunSequenceInChild(0, nullptr, absl::Seconds(1)));
  EXPECT_TRUE(none.empty());
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

TEST(CompileThreadsTest, RequestedOrOnePerCoreWithinBounds) {
  const int cores = static_cast<int>(std::thread::hardware_concurrency());
  struct Case {
    int requested, reserve, want;
  };
  for (const Case& c : std::vector<Case>{{3, 0, 3},
                                         {40, 1, 40},  // asked for: not capped
                                         {0, 1000, 1},
                                         {0, -1000, 16},
                                         {0, 0, std::clamp(cores, 1, 16)},
                                         {0, 1, std::clamp(cores - 1, 1, 16)}}) {
    EXPECT_EQ(CompileThreads(c.requested, c.reserve), c.want) << c.requested << " " << c.reserve;
  }
}

TEST(NoDriverTest, CompileAndMeasureCompilesThenReportsTheDriver) {
  if (DriverLibraryPresent()) GTEST_SKIP() << "libcuda.so.1 is present here";
  if (!codegen::NvrtcAvailable()) GTEST_SKIP() << "built without NVRTC";
  const std::string good = "extern \"C\" __global__ void k(float* p) { p[0] = 2.f; }\n";
  const std::string bad = "not CUDA";
  const std::vector<codegen::LaunchConfig> launches;
  const BlockProgram program;
  const std::vector<CompileMeasureJob> jobs = {
      {&good, &launches, &program}, {&bad, &launches, &program}, {&good, &launches, &program}};
  for (int threads : {1, 3}) {
    ASSERT_OK_AND_ASSIGN(auto all, CompileAndMeasureInChild(0, CompileCache(""), 90, jobs, {}, {},
                                                            {}, absl::InfiniteFuture(), threads));
    ASSERT_EQ(all.size(), 3u);
    // Compiled, then the measuring child found no driver (its cubin went with the child).
    for (int i : {0, 2}) {
      ASSERT_OK(all[i].compiled.status()) << i;
      EXPECT_THAT(all[i].measured.status(),
                  StatusIs(absl::StatusCode::kUnavailable,
                           StartsWith("no CUDA driver: dlopen(\"libcuda.so.1\") failed (")));
      EXPECT_GE(all[i].compile_wait_s, 0);
    }
    EXPECT_THAT(all[1].compiled.status(),
                StatusIs(absl::StatusCode::kInvalidArgument, ::testing::_));
    EXPECT_THAT(all[1].measured.status(),
                StatusIs(absl::StatusCode::kFailedPrecondition, "not measured: it did not compile"));
  }
  ASSERT_OK_AND_ASSIGN(auto late,
                       CompileAndMeasureInChild(0, CompileCache(""), 90, jobs, {}, {}, {}, absl::Now()));
  ASSERT_EQ(late.size(), 3u);
  for (const CompiledMeasurement& m : late) {
    EXPECT_THAT(m.compiled.status(), StatusIs(absl::StatusCode::kDeadlineExceeded,
                                              "not compiled: the deadline passed"));
    EXPECT_THAT(m.measured.status(), StatusIs(absl::StatusCode::kDeadlineExceeded,
                                              "not started: the deadline passed"));
  }
}

TEST(NoDriverTest, EveryGpuCallIsUnavailable) {
  if (DriverLibraryPresent()) GTEST_SKIP() << "libcuda.so.1 is present here";
  EXPECT_THAT(QueryDevice(0).status(),
              StatusIs(absl::StatusCode::kUnavailable,
                       StartsWith("no CUDA driver: dlopen(\"libcuda.so.1\") failed (")));
  EXPECT_THAT(MeasureInChild(0, "", {}, BlockProgram{}, {}, {}).status(),
              StatusIs(absl::StatusCode::kUnavailable,
                       StartsWith("no CUDA driver: dlopen(\"libcuda.so.1\") failed (")));
  // Batched: every job fails the same way (each in a fresh child); past the deadline none runs.
  const std::string cubin;
  const std::vector<codegen::LaunchConfig> launches;
  const BlockProgram program;
  const std::vector<MeasureJob> jobs(2, MeasureJob{&cubin, &launches, &program});
  ASSERT_OK_AND_ASSIGN(auto all, MeasureAllInChild(0, jobs, {}, {}));
  ASSERT_EQ(all.size(), 2u);
  for (const auto& m : all) {
    EXPECT_THAT(m.status(), StatusIs(absl::StatusCode::kUnavailable,
                                     StartsWith("no CUDA driver: dlopen(\"libcuda.so.1\") failed (")));
  }
  ASSERT_OK_AND_ASSIGN(auto late, MeasureAllInChild(0, jobs, {}, {}, {}, absl::Now()));
  ASSERT_EQ(late.size(), 2u);
  for (const auto& m : late) {
    EXPECT_THAT(m.status(), StatusIs(absl::StatusCode::kDeadlineExceeded,
                                     "not started: the deadline passed"));
  }
}

}  // namespace
}  // namespace prism::runtime
