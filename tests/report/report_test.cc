// report/: the proof report of rmsnorm_linear (b = 1, no GPU) against a golden file, its
// contents, report.html in headless Chromium (console and screenshot), and `Audit` — which
// confirms the untampered report and rejects tampered ones by exact message.
//
// Golden files (tune::Optimize without a GPU, top_families 1, instances_per_family 4):
// tests/report/golden/rmsnorm_linear_b1.report.json (report.json without its
// "timings" and "environment" objects) and rmsnorm_linear_b1.report.md (report.md up to its
// "## Environment" section). Regenerate after an intended change with
//   PRISM_REGEN_GOLDEN=1 build-release/tests/report/report_test --gtest_filter='*Golden*'
// and review the diff.
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <array>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <algorithm>
#include <functional>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_replace.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "prism/base/check.h"
#include "prism/base/paths.h"
#include "prism/ir/workloads.h"
#include "prism/proofcheck/checker.h"
#include "prism/report/audit.h"
#include "prism/report/report.h"
#include "prism/tune/tune.h"
#include "testing/files.h"
#include "testing/status_matchers.h"
#ifdef PRISM_HAVE_PNG
#include <png.h>
#endif

namespace prism::report {
namespace {
namespace fs = std::filesystem;
using ::prism::testing::StatusIs;
using ::testing::Contains;
using ::testing::HasSubstr;

void Spit(const std::string& path, const std::string& text) { std::ofstream(path, std::ios::binary) << text; }

std::string Tmp(const std::string& name) {
  const std::string d = testing::FreshTempPath("report", name);
  fs::create_directories(d);
  return d;
}

bool HaveBinary(const char* name) {
  return system((std::string("command -v ") + name + " >/dev/null 2>&1").c_str()) == 0;
}

// One optimize run shared by the tests of a process (search and tuning dominate the time),
// made on first use: ctest runs every test in its own process, and tests that need no report
// do not pay for it.
class ReportTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!NeedsReport()) return;
    if (report_ == nullptr) Build();
  }
  virtual bool NeedsReport() const { return true; }

  static void Build() {
    absl::StatusOr<Program> p = BuiltinWorkload("rmsnorm_linear", 1);
    PRISM_CHECK(p.ok());
    program_ = new Program(*std::move(p));
    absl::StatusOr<Target> t = LoadTarget("h200");
    PRISM_CHECK(t.ok());
    target_ = new Target(*t);
    tune::TuneOptions o;
    o.use_gpu = false;
    // Results must not depend on the machine's load: no search budget, and Z3's wall-clock net
    // far past any query's time (the rlimit still bounds them; search.h query_budget).
    o.search.budget = absl::Hours(1);
    o.search.query_budget.timeout_ms = 60'000;
    // Fewer tuning candidates than the CLI's defaults keep every test's setup short; the
    // report's contents do not depend on how many there are.
    o.top_families = 1;
    o.instances_per_family = 4;
    absl::StatusOr<tune::TuneResult> r = tune::Optimize(*program_, *target_, o);
    PRISM_CHECK(r.ok());
    result_ = new tune::TuneResult(*std::move(r));
    ReportOptions ro;
    ro.total_s = result_->search.elapsed_s + 1.0;
    absl::StatusOr<Report> rep = BuildReport(*program_, kLabel, *target_, *result_, ro);
    PRISM_CHECK(rep.ok());
    report_ = new Report(*std::move(rep));
    dir_ = new std::string(Tmp("base"));
    PRISM_CHECK(WriteReport(*report_, *dir_).ok());
  }

  // A fresh copy of the report directory to tamper with.
  static std::string Copy(const std::string& name) {
    const std::string d = Tmp(name);
    fs::copy(*dir_, d, fs::copy_options::recursive | fs::copy_options::overwrite_existing);
    return d;
  }

  static constexpr const char* kLabel = "<builtin rmsnorm_linear b=1>";
  static Program* program_;
  static Target* target_;
  static tune::TuneResult* result_;
  static Report* report_;
  static std::string* dir_;
};
Program* ReportTest::program_ = nullptr;
Target* ReportTest::target_ = nullptr;
tune::TuneResult* ReportTest::result_ = nullptr;
Report* ReportTest::report_ = nullptr;
std::string* ReportTest::dir_ = nullptr;

// report.json without the machine- and time-dependent parts.
std::string StableJson(const std::string& text) {
  nlohmann::ordered_json j = nlohmann::ordered_json::parse(text);
  j.erase("timings");
  j.erase("environment");
  return j.dump(2) + "\n";
}
std::string StableMarkdown(const std::string& md) { return md.substr(0, md.find("## Environment")); }

void CompareWithGolden(const std::string& name, const std::string& actual) {
  const std::string path = std::string(PRISM_SOURCE_DIR) + "/tests/report/golden/" + name;
  if (getenv("PRISM_REGEN_GOLDEN") != nullptr) {
    Spit(path, actual);
    std::cerr << "regenerated " << path << "\n";
    return;
  }
  ASSERT_TRUE(fs::exists(path)) << path << " is missing; regenerate it (see the file comment)";
  EXPECT_EQ(actual, testing::ReadFile(path)) << "the report differs from " << path
                                 << "; if the change is intended, regenerate it (see the file comment)";
}

// The golden files, and building the report again from the same result gives the same bytes.
TEST_F(ReportTest, GoldenReport) {
  CompareWithGolden("rmsnorm_linear_b1.report.json", StableJson(report_->json));
  CompareWithGolden("rmsnorm_linear_b1.report.md", StableMarkdown(report_->markdown));
  ReportOptions ro;
  ro.total_s = result_->search.elapsed_s + 1.0;
  ASSERT_OK_AND_ASSIGN(Report again, BuildReport(*program_, kLabel, *target_, *result_, ro));
  EXPECT_EQ(again.json, report_->json);
  EXPECT_EQ(again.markdown, report_->markdown);
  EXPECT_EQ(again.html, report_->html);
  EXPECT_EQ(again.proof_json, report_->proof_json);
  EXPECT_EQ(again.smt_files, report_->smt_files);
}

// The timeline's stages: the search's three, the tuner's steps that ran (here, by the cost
// model: building the candidates, and compiling them when NVRTC is there), and what is left of
// the total; a result without step times keeps one stage for all of tuning.
TEST_F(ReportTest, TimingStages) {
  struct Stages {
    std::vector<std::string> names;
    double last = 0;  // the last stage's seconds
  };
  auto stages = [](const Report& r) {
    Stages out;
    const nlohmann::json j = nlohmann::json::parse(r.json);
    for (const auto& s : j["timings"]["stages"]) {
      out.names.push_back(s["stage"]);
      out.last = s["seconds"];
    }
    return out;
  };
  const tune::StepTimes& t = result_->times;
  const double steps = t.candidates_s + std::max(0.0, t.compile_s);
  ReportOptions ro;
  ro.total_s = result_->search.elapsed_s + steps + 0.5;
  ASSERT_OK_AND_ASSIGN(Report timed, BuildReport(*program_, kLabel, *target_, *result_, ro));
  std::vector<std::string> expected = {"generate", "prove", "rank and prune",
                                       "instantiate and codegen"};
  if (t.compile_s >= 0) expected.push_back("compile");
  expected.push_back("other");
  EXPECT_EQ(stages(timed).names, expected);
  EXPECT_NEAR(stages(timed).last, 0.5, 1e-9);
  // (TuneResult does not copy: the shared result's times are set aside and put back.)
  const tune::StepTimes times = result_->times;
  result_->times = tune::StepTimes{};
  absl::StatusOr<Report> untimed = BuildReport(*program_, kLabel, *target_, *result_, ro);
  result_->times = times;
  ASSERT_OK(untimed.status());
  EXPECT_EQ(stages(*untimed).names,
            (std::vector<std::string>{"generate", "prove", "rank and prune",
                                      "instantiate, codegen, compile, measure"}));
  EXPECT_NEAR(stages(*untimed).last, steps + 0.5, 1e-9);
}

TEST_F(ReportTest, ContentsMatchTheResult) {
  const nlohmann::json j = nlohmann::json::parse(report_->json);
  EXPECT_EQ(j["format"], "prism.report");
  EXPECT_EQ(j["version"], kReportVersion);
  EXPECT_EQ(j["selection"]["method"], "cost model");
  EXPECT_EQ(j["selection"]["family"], result_->chosen().family + 1);
  EXPECT_EQ(j["kernels"]["launches"].size(), result_->code.launches.size());
  EXPECT_EQ(j["funnel"]["generated"], result_->search.funnel.generated);
  EXPECT_EQ(j["funnel"]["instantiated"], result_->candidates.size());
  EXPECT_EQ(j["pruned"].size(), result_->search.pruned.size());
  ASSERT_GT(result_->search.pruned.size(), 0u) << "rmsnorm_linear b=1 prunes families";
  // Every pruned family has its deciding query on file, and the counts add up per rule.
  std::map<std::string, int64_t> per_rule;
  for (const auto& p : j["pruned"]) {
    for (const auto& r : p["rules"]) ++per_rule[r.get<std::string>()];
    ASSERT_TRUE(p.contains("smt_file")) << p.dump();
  }
  EXPECT_EQ(per_rule, result_->search.funnel.pruned_by_rule);
  EXPECT_EQ(report_->smt_files.size(), result_->search.pruned.size());
  for (const auto& [name, text] : report_->smt_files) {
    EXPECT_TRUE(fs::exists(*dir_ + "/smt/" + name)) << name;
    EXPECT_THAT(text, HasSubstr("; decision: ")) << name;
    EXPECT_THAT(text, HasSubstr("(check-sat)")) << name;
    EXPECT_THAT(text, ::testing::Not(HasSubstr(" ms, rlimit"))) << "no timings in " << name;
  }
  // The proof file is accepted by the independent checker and its chain is the report's.
  ASSERT_OK_AND_ASSIGN(std::string root, DataDir());
  ASSERT_OK_AND_ASSIGN(std::vector<proofcheck::RuleFile> rules,
                       proofcheck::ReadRuleDirectory(JoinPath(root, "smt_theories/equiv")));
  ASSERT_OK_AND_ASSIGN(proofcheck::ProofSummary s, proofcheck::CheckProof(report_->proof_json, rules));
  EXPECT_EQ(s.steps, j["proof"]["steps"].size());
  EXPECT_EQ(s.start, j["proof"]["start"]);
  EXPECT_EQ(s.goal, j["proof"]["goal"]);
  EXPECT_THAT(j["proof"]["rules_used"], Contains("split-k"));
  for (const char* section : {"## Input program", "## Chosen kernels", "## Equivalence proof",
                              "## Pruning funnel", "## Pruned families",
                              "## Measured times vs the cost model", "## Versions"}) {
    EXPECT_THAT(report_->markdown, HasSubstr(section));
  }
  // Self-contained: no script, nothing loaded from anywhere.
  for (const char* bad : {"<script", "src=", "href=", "@import", "url("}) {
    EXPECT_THAT(report_->html, ::testing::Not(HasSubstr(bad))) << bad;
  }
  EXPECT_THAT(report_->html, HasSubstr("<svg id=\"funnel\""));
  EXPECT_THAT(report_->html, HasSubstr("<svg id=\"timeline\""));
}

TEST(WriteReportTest, ErrorsAndStaleQueries) {
  Report r;
  r.json = "{}\n";
  r.smt_files = {{"001-a.prune.core.smt2", "(check-sat)\n"}};
  const std::string d = Tmp("write");
  const std::string file = d + "/a_file";
  Spit(file, "x");
  EXPECT_THAT(WriteReport(r, file + "/out"),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("cannot create the output directory '" + file + "/out': ")));
  // A stale query from an earlier report is removed; the report's own are written.
  fs::create_directories(d + "/out/smt");
  Spit(d + "/out/smt/old.smt2", "(check-sat)\n");
  ASSERT_OK(WriteReport(r, d + "/out"));
  EXPECT_FALSE(fs::exists(d + "/out/smt/old.smt2"));
  EXPECT_EQ(testing::ReadFile(d + "/out/smt/001-a.prune.core.smt2"), "(check-sat)\n");
  for (const char* f : {"report.json", "report.md", "report.html", "proof.json"}) {
    EXPECT_TRUE(fs::exists(d + "/out/" + f)) << f;
  }
  // A file in the way of report.json.
  fs::create_directories(d + "/blocked/report.json");
  EXPECT_THAT(WriteReport(r, d + "/blocked"),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("cannot write '" + d + "/blocked/report.json': ")));
}

// ---- headless Chromium ------------------------------------------------------------------

struct Shot {
  int exit_code = -1;
  std::string console;  // the page's console messages (Chromium's "INFO:CONSOLE" log lines)
  std::string png;
};

Shot Screenshot(const std::string& html_path, const std::string& png_path) {
  const std::string log = png_path + ".log";
  fs::remove(png_path);
  const std::string cmd = "timeout 60 chromium --headless --no-sandbox --disable-gpu "
                          "--hide-scrollbars --window-size=1100,900 --screenshot='" +
                          png_path + "' --enable-logging=stderr --v=0 'file://" + html_path + "' 2>'" +
                          log + "' >/dev/null";
  Shot s;
  const int rc = system(cmd.c_str());
  s.exit_code = WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
  std::istringstream in(testing::ReadFile(log));
  for (std::string line; std::getline(in, line);) {
    if (absl::StrContains(line, ":CONSOLE")) s.console += line + "\n";
  }
  s.png = png_path;
  return s;
}

#ifdef PRISM_HAVE_PNG
// Pixels of the screenshot within `tol` of `rgb`; -1 if the file is not a readable PNG.
int64_t CountColor(const std::string& png_path, std::array<int, 3> rgb, int tol = 12) {
  png_image image;
  memset(&image, 0, sizeof image);
  image.version = PNG_IMAGE_VERSION;
  if (!png_image_begin_read_from_file(&image, png_path.c_str())) return -1;
  image.format = PNG_FORMAT_RGB;
  std::vector<unsigned char> px(PNG_IMAGE_SIZE(image));
  if (!png_image_finish_read(&image, nullptr, px.data(), 0, nullptr)) return -1;
  int64_t n = 0;
  for (size_t i = 0; i + 2 < px.size(); i += 3) {
    if (std::abs(px[i] - rgb[0]) <= tol && std::abs(px[i + 1] - rgb[1]) <= tol &&
        std::abs(px[i + 2] - rgb[2]) <= tol) {
      ++n;
    }
  }
  return n;
}
#endif

TEST_F(ReportTest, HtmlLoadsInChromiumWithoutConsoleErrorsAndShowsTheFunnel) {
  if (!HaveBinary("chromium")) GTEST_SKIP() << "chromium is not installed (Debian: apt-get install chromium)";
  const std::string out = std::string(PRISM_BINARY_DIR) + "/tests/report";
  fs::create_directories(out);
  const std::string html = fs::absolute(*dir_ + "/report.html").string();
  const Shot s = Screenshot(html, out + "/report_screenshot.png");
  ASSERT_EQ(s.exit_code, 0);
  EXPECT_EQ(s.console, "") << "console messages while loading " << html;
  ASSERT_TRUE(fs::exists(s.png));
  EXPECT_GT(fs::file_size(s.png), 10000u) << "the screenshot looks blank";
  // Negative control: a page that logs to the console is caught.
  const std::string bad = out + "/console_control.html";
  Spit(bad, "<!DOCTYPE html><html><body><script>console.error('control')</script></body></html>");
  EXPECT_THAT(Screenshot(bad, out + "/console_control.png").console, HasSubstr("control"));
#ifdef PRISM_HAVE_PNG
  // The funnel's bars (blue stages, red cuts; the timeline uses other colours) are on screen.
  EXPECT_GT(CountColor(s.png, {0x2e, 0x6f, 0xb7}), 2000) << s.png;
  EXPECT_GT(CountColor(s.png, {0xc0, 0x39, 0x2b}), 1000) << s.png;
  EXPECT_EQ(CountColor(out + "/console_control.png", {0x2e, 0x6f, 0xb7}), 0);
#endif
}

// ---- audit ----------------------------------------------------------------------------------

AuditOptions Fast(const std::string& solver = "z3") {
  AuditOptions o;
  o.solver = solver;
  o.sample_families = 3;
  o.members_per_family = 3;
  return o;
}

TEST_F(ReportTest, AuditConfirmsTheReport) {
  if (!HaveBinary("z3")) GTEST_SKIP() << "z3 is not installed";
  ASSERT_OK_AND_ASSIGN(AuditResult a, Audit(*dir_, Fast()));
  EXPECT_TRUE(a.ok()) << ::testing::PrintToString(a.disagreements);
  EXPECT_EQ(a.proof_steps, nlohmann::json::parse(report_->json)["proof"]["steps"].size());
  EXPECT_EQ(a.smt_files, static_cast<int64_t>(report_->smt_files.size()));
  EXPECT_EQ(a.smt_agree, a.smt_files);
  EXPECT_EQ(a.families_sampled, 3);
  EXPECT_EQ(a.members_checked, 9);
  for (const auto& [rule, c] : a.per_rule) {
    EXPECT_EQ(c.smt_agree, c.families) << rule;
    EXPECT_EQ(c.smt_disagree, 0) << rule;
  }
}

TEST_F(ReportTest, AuditWithCvc5AgreesToo) {
  if (!HaveBinary("cvc5")) GTEST_SKIP() << "cvc5 is not installed (Debian: apt-get install cvc5)";
  AuditOptions o = Fast("cvc5");
  o.sample_families = 0;
  ASSERT_OK_AND_ASSIGN(AuditResult a, Audit(*dir_, o));
  EXPECT_TRUE(a.ok()) << ::testing::PrintToString(a.disagreements);
  EXPECT_EQ(a.solver, "cvc5");
  EXPECT_EQ(a.smt_agree + a.smt_unknown, a.smt_files);
  EXPECT_GT(a.smt_agree, 0);
}

// Edits report.json of a copy in place.
void EditJson(const std::string& dir, const std::function<void(nlohmann::ordered_json&)>& edit) {
  nlohmann::ordered_json j = nlohmann::ordered_json::parse(testing::ReadFile(dir + "/report.json"));
  edit(j);
  Spit(dir + "/report.json", j.dump(2) + "\n");
}

class TamperTest : public ReportTest, public ::testing::WithParamInterface<std::vector<std::string>> {};

// Each row tampers with a copy of the report in one way; the audit names it.
TEST_P(TamperTest, AuditRejectsTheTamperedReport) {
  if (!HaveBinary("z3")) GTEST_SKIP() << "z3 is not installed";
  const nlohmann::json base = nlohmann::json::parse(report_->json);
  size_t inf = 0, dom = 0;
  bool have_inf = false, have_dom = false;
  for (size_t i = 0; i < base["pruned"].size(); ++i) {
    if (!have_inf && base["pruned"][i]["verdict"] == "infeasible") inf = i, have_inf = true;
    if (!have_dom && base["pruned"][i]["verdict"] == "dominated") dom = i, have_dom = true;
  }
  ASSERT_TRUE(have_inf && have_dom) << "rmsnorm_linear b=1 has infeasible and dominated families";
  const std::string inf_file = base["pruned"][inf]["smt_file"];
  const std::string inf_label =
      "pruned family #" + std::to_string(inf + 1) + " (" + base["pruned"][inf]["family"].get<std::string>() + ")";
  const std::string dom_label =
      "pruned family #" + std::to_string(dom + 1) + " (" + base["pruned"][dom]["family"].get<std::string>() + ")";
  const std::string dom_rule = base["pruned"][dom]["rules"][0];
  struct Case {
    std::string name;
    std::function<void(const std::string& dir)> tamper;
    std::vector<std::string> expected;  // substrings of disagreements, each in some entry
  };
  const std::vector<Case> cases = {
      {"changed_verdict",
       [&](const std::string& d) { EditJson(d, [&](auto& j) { j["pruned"][inf]["verdict"] = "dominated"; }); },
       {inf_label + ": verdict 'dominated' but none of its deciding rules is a dominance rule",
        inf_file + ": its header says 'infeasible"}},
      {"changed_answer",
       [&](const std::string& d) { EditJson(d, [&](auto& j) { j["pruned"][inf]["expected"] = "sat"; }); },
       {inf_file + ": the report says sat, z3 answers unsat"}},
      {"edited_proof_step",
       [&](const std::string& d) {
         nlohmann::ordered_json p = nlohmann::ordered_json::parse(testing::ReadFile(d + "/proof.json"));
         p["steps"][0]["rule"] = "split-sum";
         Spit(d + "/proof.json", p.dump(2) + "\n");
       },
       {"proof.json: proof rejected: step 1: rule 'split-sum' does not match at position",
        "proof.json: hash "}},
      {"removed_smt_file", [&](const std::string& d) { fs::remove(d + "/" + inf_file); },
       {inf_file + ": missing (the deciding query of " + inf_label + ")"}},
      {"edited_smt_file",
       [&](const std::string& d) {
         std::string t = testing::ReadFile(d + "/" + inf_file);
         t = absl::StrReplaceAll(t, {{"(check-sat)", "(assert true)\n(check-sat)"}});
         Spit(d + "/" + inf_file, t);
       },
       {inf_file + ": hash "}},
      {"wrong_rule",
       [&](const std::string& d) {
         EditJson(d, [&](auto& j) {
           j["pruned"][dom]["rules"] = {"thread_limits"};
           j["funnel"]["pruned_by_rule"][dom_rule] = j["funnel"]["pruned_by_rule"][dom_rule].template get<int>() - 1;
           j["funnel"]["pruned_by_rule"]["thread_limits"] = 1;
         });
       },
       {dom_label + ": verdict 'dominated' but none of its deciding rules is a dominance rule",
        ": deciding rule 'thread_limits' is not an assertion of the query"}},
      {"funnel_count",
       [&](const std::string& d) {
         EditJson(d, [&](auto& j) { j["funnel"]["pruned_by_rule"][dom_rule] = 99; });
       },
       {"funnel.pruned_by_rule does not match the pruned families listed (" + dom_rule + ": 99 claimed, "}},
  };
  for (const Case& c : cases) {
    if (std::find(GetParam().begin(), GetParam().end(), c.name) == GetParam().end()) continue;
    SCOPED_TRACE(c.name);
    const std::string d = Copy(c.name);
    c.tamper(d);
    AuditOptions o = Fast();
    o.sample_families = 0;
    ASSERT_OK_AND_ASSIGN(AuditResult a, Audit(d, o));
    EXPECT_FALSE(a.ok());
    for (const std::string& e : c.expected) {
      EXPECT_THAT(a.disagreements, Contains(HasSubstr(e))) << ::testing::PrintToString(a.disagreements);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Smt, TamperTest,
                         ::testing::Values(std::vector<std::string>{"changed_verdict", "changed_answer"},
                                           std::vector<std::string>{"removed_smt_file", "edited_smt_file"}));
INSTANTIATE_TEST_SUITE_P(Other, TamperTest,
                         ::testing::Values(std::vector<std::string>{"edited_proof_step"},
                                           std::vector<std::string>{"wrong_rule", "funnel_count"}));

// The member check on its own: a dominated family whose rules are swapped for a rule its
// members satisfy is caught by concrete evaluation, not only by the SMT file.
TEST_F(ReportTest, AuditMemberCheckCatchesAWrongRule) {
  if (!HaveBinary("z3")) GTEST_SKIP() << "z3 is not installed";
  const nlohmann::json base = nlohmann::json::parse(report_->json);
  const std::string d = Copy("member");
  size_t count = base["pruned"].size();
  EditJson(d, [&](auto& j) {
    for (size_t i = 0; i < count; ++i) j["pruned"][i]["rules"] = {"grid_limits"};
  });
  AuditOptions o = Fast();
  o.sample_families = 1;
  o.members_per_family = 2;
  ASSERT_OK_AND_ASSIGN(AuditResult a, Audit(d, o));
  EXPECT_THAT(a.disagreements, Contains(HasSubstr("violates none of its deciding rules (grid_limits)")));
  EXPECT_EQ(a.per_rule["grid_limits"].members, 2);
  EXPECT_EQ(a.per_rule["grid_limits"].members_violating, 0);
}

TEST_F(ReportTest, AuditTheoryChangeIsADisagreement) {
  if (!HaveBinary("z3")) GTEST_SKIP() << "z3 is not installed";
  ASSERT_OK_AND_ASSIGN(std::string root, DataDir());
  const std::string theories = Tmp("theories") + "/smt_theories";
  fs::copy(root + "/smt_theories", theories, fs::copy_options::recursive);
  Spit(theories + "/rules/smem_capacity.smt2", testing::ReadFile(theories + "/rules/smem_capacity.smt2") + "; edited\n");
  AuditOptions o = Fast();
  o.sample_families = 0;
  o.theory_dir = theories;
  ASSERT_OK_AND_ASSIGN(AuditResult a, Audit(*dir_, o));
  EXPECT_THAT(a.disagreements,
              Contains(HasSubstr("theory file rules/smem_capacity.smt2 has hash ")));
  EXPECT_THAT(a.disagreements, Contains(HasSubstr("(the theories changed since the report was made)")));
}

// Reports that cannot be audited at all: no report needs to be built for these.
TEST(AuditErrorTest, MessagesNameTheProblem) {
  const std::string empty = Tmp("empty");
  const auto dir_with = [](const std::string& name, const std::string& report_json) {
    const std::string d = Tmp(name);
    Spit(d + "/report.json", report_json);
    return d;
  };
  const std::string notjson = dir_with("notjson", "{");
  const std::string format = dir_with("format", R"({"format": "prism.proof", "version": 1})");
  const std::string version = dir_with("version", R"({"format": "prism.report", "version": 2})");
  const std::string noversion = dir_with("noversion", R"({"format": "prism.report"})");
  const std::string minimal = dir_with("minimal", R"({"format": "prism.report", "version": 1})");
  const std::string mistyped =
      dir_with("mistyped", R"({"format": "prism.report", "version": 1, "theory_files": {}})");
  struct Case {
    std::string dir;
    AuditOptions options;
    absl::StatusCode code;
    std::string message;
  };
  AuditOptions cvc4;
  cvc4.solver = "cvc4";
  AuditOptions absent;
  absent.solver_binary = "/nonexistent/z3";
  const std::vector<Case> cases = {
      {empty + "/nope", {}, absl::StatusCode::kNotFound,
       "audit: '" + empty + "/nope' is not a directory (give the --out directory of prism optimize)"},
      {empty, {}, absl::StatusCode::kNotFound,
       "audit: '" + empty + "/report.json' is missing (the directory holds no report: run prism optimize --out " +
           empty + ")"},
      {notjson, {}, absl::StatusCode::kInvalidArgument, notjson + "/report.json: not valid JSON: "},
      {format, {}, absl::StatusCode::kInvalidArgument,
       format + "/report.json: format is 'prism.proof', expected 'prism.report'"},
      {version, {}, absl::StatusCode::kInvalidArgument,
       version + "/report.json: schema version 2 is not supported (this prism reads version 1); "
                 "regenerate the report with this prism's 'prism optimize'"},
      {noversion, {}, absl::StatusCode::kInvalidArgument,
       noversion + "/report.json: version: missing or not an integer"},
      {minimal, {}, absl::StatusCode::kInvalidArgument, minimal + "/report.json: theory_files: missing"},
      {mistyped, {}, absl::StatusCode::kInvalidArgument,
       mistyped + "/report.json: theory_files: expected array, found object"},
      {minimal, cvc4, absl::StatusCode::kInvalidArgument, "unknown solver 'cvc4'; expected z3 or cvc5"},
      {minimal, absent, absl::StatusCode::kNotFound,
       "solver '/nonexistent/z3' not found: '/nonexistent/z3 --version' failed ("},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.message);
    EXPECT_THAT(Audit(c.dir, c.options), StatusIs(c.code, HasSubstr(c.message)));
  }
}

}  // namespace
}  // namespace prism::report
