// `prism search` in-process through RunCli: the text and JSON forms on small programs, and the
// error paths by exact message.
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "cli/run_prism.h"
#include "tools/cli.h"

namespace prism::cli {
// Named, not anonymous: with PRISM_UNITY_BUILD the nine files share one translation unit.
namespace search_cmd_test {
using ::testing::HasSubstr;
using ::testing::StartsWith;

// A small rmsnorm_linear (the search over it takes well under a second).
std::string SmallProgram() {
  const std::string path = ::testing::TempDir() + "/search_small.prism";
  std::ofstream(path) << "X = input f16[4, 128]\nW = input f16[128, 64]\n"
                         "Y = matmul(rms_norm(X, -1), W)\noutput Y\n";
  return path;
}

TEST(SearchCliTest, TextShowsTheFunnelAndTheBestFamily) {
  const Result r = RunPrism({"search", SmallProgram(), "--top", "1"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  for (const char* s : {"funnel:", "generated", "pruned (abstract expression)", "maps validated",
                        "proved", "survivors", "families (", "#1  1 kernel, cost ",
                        "acc_sumsq_last", "inv_rms"}) {
    EXPECT_THAT(r.out, HasSubstr(s));
  }
  EXPECT_THAT(r.out, ::testing::Not(HasSubstr("#2 ")));  // --top 1
}

// No family, and a known cause: the text says what to change (search::NoFamilyHint).
TEST(SearchCliTest, NoFamilySaysWhy) {
  const std::string path = ::testing::TempDir() + "/search_concat.prism";
  std::ofstream(path) << "A = input f16[2, 8]\nB = input f16[3, 8]\nY = concat(A, exp(B), 0)\n"
                         "output Y\n";
  const Result r = RunPrism({"search", path});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("families (0, best first):\n  (none; concat (line 3) is not a "
                               "block op: it runs as a kernel of its own (prism::OptimizeParts "
                               "and prism optimize cut the program there: search "
                               "SplitAtLibraryOp))\n"));
  EXPECT_THAT(RunPrism({"search", SmallProgram()}).out, ::testing::Not(HasSubstr("(none")));
}

// A bias of rank 1 is searched at rank 2 (ir PadBroadcastInputs), as prism optimize does;
// until 2026-12-05 the search found no family ("b f16[64] is broadcast against rank 2 ...").
TEST(SearchCliTest, ABroadcastInputIsSearchedAtItsUsersRank) {
  const std::string path = ::testing::TempDir() + "/search_bias.prism";
  std::ofstream(path) << "X = input f16[4, 64]\nb = input f16[64]\nY = add(X, b)\noutput Y\n";
  const Result r = RunPrism({"search", path});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, StartsWith("view     b f16[64] as f16[1, 64] (the same elements: its users "
                                "broadcast it at that rank; pass the same buffer)\n"));
  EXPECT_THAT(r.out, ::testing::Not(HasSubstr("(none")));
  const Result j = RunPrism({"search", path, "--json", "--top", "1"});
  ASSERT_EQ(j.code, 0) << j.err;
  EXPECT_EQ(nlohmann::json::parse(j.out)["padded_inputs"],
            nlohmann::json::parse(R"([{"tensor": "b", "declared": [64], "read_as": [1, 64]}])"));
}

// Several outputs: each output's program searched alone (OutputCone), one block (or JSON
// object) per output. Before 2026-12-05: "search supports programs with one output".
TEST(SearchCliTest, SeveralOutputsOneSearchEach) {
  const std::string path = ::testing::TempDir() + "/search_two.prism";
  std::ofstream(path) << "X = input f16[4, 128]\nW = input f16[128, 64]\n"
                         "Y = matmul(X, W)\nS = softmax(X, -1)\noutput Y\noutput S\n";
  const Result r = RunPrism({"search", path, "--top", "1"});
  ASSERT_EQ(r.code, 0) << r.err;
  for (const std::string& s : {"output   Y (1 of 2)\nprogram  " + path + " output Y\n",
                              "\noutput   S (2 of 2)\nprogram  " + path + " output S\n"}) {
    EXPECT_THAT(r.out, HasSubstr(s));
  }
  const Result j = RunPrism({"search", path, "--json"});
  ASSERT_EQ(j.code, 0) << j.err;
  const nlohmann::json parsed = nlohmann::json::parse(j.out);
  ASSERT_EQ(parsed["outputs"].size(), 2u);
  EXPECT_EQ(parsed["outputs"][1]["program"], path + " output S");
  EXPECT_GE(parsed["outputs"][0]["families"].size(), 1u);
}

TEST(SearchCliTest, JsonHasTheDocumentedFields) {
  const Result r = RunPrism({"search", SmallProgram(), "--json"});
  ASSERT_EQ(r.code, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_TRUE(j["elapsed_s"].is_number());
  for (const char* k : {"generate", "prove", "prune"}) EXPECT_TRUE(j["stages_s"][k].is_number()) << k;
  const nlohmann::json& f = j["funnel"];
  for (const char* k : {"generated", "pruned_abstract", "structures", "map_validated", "mapped",
                        "proved", "survivors"}) {
    EXPECT_TRUE(f[k].is_number_integer()) << k;
  }
  EXPECT_TRUE(f["pruned_by_rule"].is_object());
  ASSERT_TRUE(j["families"].is_array());
  ASSERT_FALSE(j["families"].empty());
  EXPECT_EQ(j["families"].size(), f["survivors"].get<size_t>());
  double last = 0;
  for (const nlohmann::json& fam : j["families"]) {
    EXPECT_GE(fam["cost_us"].get<double>(), last);  // best first
    EXPECT_LE(fam["lower_bound_us"].get<double>(), fam["cost_us"].get<double>());
    last = fam["cost_us"].get<double>();
    EXPECT_GE(fam["kernels"].get<int>(), 1);
    ASSERT_TRUE(fam["params"].is_array());
    for (const nlohmann::json& p : fam["params"]) {
      EXPECT_TRUE(fam["assignment"].contains(p["name"].get<std::string>())) << p.dump();
    }
    EXPECT_EQ(fam["sgraph"]["format"], "prism.sgraph");
  }
}

TEST(SearchCliTest, VerifyEmulatesTheBestFamily) {
  const Result text = RunPrism({"search", SmallProgram(), "--verify", "--seed", "7"});
  ASSERT_EQ(text.code, 0) << text.err;
  EXPECT_THAT(text.out, HasSubstr("verified: the best family on the CPU emulator matches the "
                                  "reference (seed 7, relative error "));
  const Result json = RunPrism({"search", SmallProgram(), "--verify", "--json", "--threads", "1"});
  ASSERT_EQ(json.code, 0) << json.err;
  const nlohmann::json j = nlohmann::json::parse(json.out);
  EXPECT_EQ(j["verified"]["seed"], 1);
  EXPECT_LE(j["verified"]["tolerance_ratio"].get<double>(), 1.0);
}

TEST(SearchCliTest, NoPruneKeepsAtLeastAsManyFamilies) {
  const Result pruned = RunPrism({"search", SmallProgram(), "--json"});
  const Result all = RunPrism({"search", SmallProgram(), "--json", "--no-prune"});
  ASSERT_EQ(pruned.code, 0);
  ASSERT_EQ(all.code, 0);
  const nlohmann::json a = nlohmann::json::parse(pruned.out), b = nlohmann::json::parse(all.out);
  EXPECT_GE(b["families"].size(), a["families"].size());
  EXPECT_TRUE(b["funnel"]["pruned_by_rule"].empty() ||
              b["funnel"]["pruned_by_rule"].contains("no_feasible_instance"));
}

TEST(SearchCliTest, Errors) {
  struct Row {
    std::vector<std::string> args;
    std::string err;
  };
  const std::vector<Row> rows = {
      {{"search"}, "prism: error: give exactly one of FILE or --workload"},
      {{"search", "--workload", "gqa", "--target", "h300"},
       "prism: error: unknown target 'h300'; known targets: a100_80gb, h100_sxm, h200, l40s, "
       "rtx4090"},
      {{"search", "--workload", "attention"}, "unknown workload 'attention'"},
      {{"search", "--workload", "gqa", "--max-block-ops", "0"},
       "prism: error: --max-block-ops expects an integer in 1..16, found '0'"},
      {{"search", "--workload", "gqa", "--budget-s", "0"},
       "prism: error: --budget-s expects an integer in 1..3600, found '0'"},
      {{"search", "/nonexistent/x.prism"}, "prism: error: cannot open '/nonexistent/x.prism'"},
      {{"search", "--workload", "gqa", "--max-kernels", "3"},
       "prism: error: --max-kernels expects an integer in 1..2, found '3'"},
  };
  for (const Row& row : rows) {
    const Result r = RunPrism(row.args);
    EXPECT_EQ(r.code, 2) << ::testing::PrintToString(row.args) << "\n" << r.err;
    EXPECT_THAT(r.err, HasSubstr(row.err)) << ::testing::PrintToString(row.args);
    EXPECT_EQ(r.out, "");
  }
}

}  // namespace search_cmd_test
}  // namespace prism::cli
