// `prism optimize` writes the proof report and `prism audit` re-checks it, in-process through
// RunCli with --no-gpu: the report files, the audit's output, a tampered report (exit 2 with the
// exact message), and the error paths by exact message.
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
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
namespace audit_cmd_test {
namespace fs = std::filesystem;
using ::testing::HasSubstr;

std::string Tmp(const std::string& name) {
  const std::string d = ::testing::TempDir() + "/prism_audit_cli_" + name + "_" + std::to_string(getpid());
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

bool HaveBinary(const char* name) {
  return system((std::string("command -v ") + name + " >/dev/null 2>&1").c_str()) == 0;
}

// A small rmsnorm_linear whose search prunes families (two dominated, two infeasible).
// Runs prism optimize on it into DIR/OUT; returns DIR/OUT.
std::string Optimized(const std::string& dir, const std::string& out = "out") {
  const std::string path = dir + "/small.prism";
  std::ofstream(path) << "X = input f16[4, 512]\nW = input f16[512, 1024]\n"
                         "Y = matmul(rms_norm(X, -1), W)\noutput Y\n";
  const std::string o = dir + "/" + out;
  // Few tuning candidates keep it short (the report's pruned families come from the search).
  const Result r = RunPrism(
      {"optimize", path, "--no-gpu", "--out", o, "--budget-s", "86400", "--top", "1", "--instances", "4"});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("report    " + o + "/{report.json, report.md, report.html, proof.json}, 4 SMT files in " +
                               o + "/smt (check with: prism audit " + o + ")\n"));
  return o;
}

TEST(AuditCliTest, OptimizeWritesAReportThatTheAuditConfirms) {
  if (!HaveBinary("z3")) GTEST_SKIP() << "z3 is not installed";
  const std::string out = Optimized(Tmp("ok"));
  for (const char* f : {"report.json", "report.md", "report.html", "proof.json"}) {
    EXPECT_TRUE(fs::exists(out + "/" + f)) << f;
  }
  EXPECT_EQ(std::distance(fs::directory_iterator(out + "/smt"), fs::directory_iterator()), 4);
  const Result a = RunPrism({"audit", out});
  EXPECT_EQ(a.code, 0) << a.err << a.out;
  EXPECT_EQ(a.err, "");
  for (const std::string& s : {"report   " + out + "\n", std::string("proof    accepted by the checker ("),
                               std::string("smt      4 files, 4 agree with z3\n"),
                               std::string("members  16 members of 4 sampled pruned families checked, 16 emulated\n"),
                               std::string("per rule:\n  rule "), std::string("\n  occupancy_floor  "),
                               std::string("\n  smem_capacity    "),
                               std::string("audit: the report is confirmed\n")}) {
    EXPECT_THAT(a.out, HasSubstr(s));
  }
  // --json, with the second solver when it is installed.
  std::vector<std::string> args = {"audit", out, "--json", "--sample", "1", "--members", "2"};
  if (HaveBinary("cvc5")) {
    args.push_back("--solver");
    args.push_back("cvc5");
  }
  const Result j = RunPrism(args);
  ASSERT_EQ(j.code, 0) << j.err;
  const nlohmann::json doc = nlohmann::json::parse(j.out);
  EXPECT_EQ(doc["ok"], true);
  EXPECT_EQ(doc["smt"]["files"], 4);
  EXPECT_EQ(doc["members"]["checked"], 2);
  EXPECT_EQ(doc["disagreements"].size(), 0u);
  EXPECT_EQ(doc["per_rule"]["smem_capacity"]["families"], 2);

  // Tampered: a deciding query removed.
  const std::string smt = (*fs::directory_iterator(out + "/smt")).path().string();
  const std::string name = "smt/" + fs::path(smt).filename().string();
  fs::remove(smt);
  const Result t = RunPrism({"audit", out, "--sample", "0"});
  EXPECT_EQ(t.code, 2);
  EXPECT_THAT(t.out, HasSubstr("DISAGREES: " + name + ": missing (the deciding query of pruned family #"));
  EXPECT_THAT(t.err, ::testing::StartsWith("prism: error: audit of " + out + " found 1 disagreement; the first: " +
                                           name + ": missing (the deciding query of pruned family #"));
}

std::string Slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Without a GPU two runs write the same report, byte for byte, except the wall times.
TEST(AuditCliTest, ReportFilesAreDeterministic) {
  const std::string dir = Tmp("det");
  const std::string a = Optimized(dir, "a"), b = Optimized(dir, "b");
  for (const char* f : {"report.md", "proof.json"}) EXPECT_EQ(Slurp(a + "/" + f), Slurp(b + "/" + f)) << f;
  for (const auto& e : fs::directory_iterator(a + "/smt")) {
    const std::string name = e.path().filename().string();
    EXPECT_EQ(Slurp(e.path().string()), Slurp(b + "/smt/" + name)) << name;
  }
  nlohmann::json ja = nlohmann::json::parse(Slurp(a + "/report.json"));
  nlohmann::json jb = nlohmann::json::parse(Slurp(b + "/report.json"));
  EXPECT_TRUE(ja.contains("timings"));
  ja.erase("timings");
  jb.erase("timings");
  EXPECT_EQ(ja, jb);
  // The HTML differs only in the timeline.
  const auto strip = [](std::string html) {
    const size_t at = html.find("<svg id=\"timeline\"");
    return html.substr(0, at) + html.substr(html.find("</svg>", at));
  };
  EXPECT_EQ(strip(Slurp(a + "/report.html")), strip(Slurp(b + "/report.html")));
}

TEST(AuditCliTest, Errors) {
  const std::string d = Tmp("err");
  struct Case {
    std::vector<std::string> args;
    std::string err;
  };
  const std::vector<Case> cases = {
      {{"audit"}, "prism: error: give the report directory: prism audit DIR\n"},
      {{"audit", d + "/none"},
       "prism: error: audit: '" + d + "/none' is not a directory (give the --out directory of prism optimize)\n"},
      {{"audit", d},
       "prism: error: audit: '" + d + "/report.json' is missing (the directory holds no report: run prism optimize --out " +
           d + ")\n"},
      {{"audit", d, "--solver", "cvc4"},
       "prism: error: --solver expects one of z3, cvc5, found 'cvc4'\n"},
  };
  for (const Case& c : cases) {
    const Result r = RunPrism(c.args);
    EXPECT_EQ(r.code, 2) << c.err;
    EXPECT_EQ(r.out, "");
    EXPECT_EQ(r.err, c.err);
  }
}

}  // namespace audit_cmd_test
}  // namespace prism::cli
