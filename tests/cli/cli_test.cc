// In-process tests of the `prism` command line (src/tools/): a table of invocations with the
// exact exit code, stdout and stderr they must produce; the --json outputs parsed back; the
// option parser on its own.
#include "cli/run_prism.h"
#include "tools/cli.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <system_error>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "prism/ir/json.h"
#include "prism/ir/workloads.h"
#include "prism/smt/target.h"
#include "testing/status_matchers.h"
#include "tools/options.h"
#include "tools/format.h"
#include "tools/targets.h"

namespace prism::cli {
// Named, not anonymous: with PRISM_UNITY_BUILD the nine files share one translation unit.
namespace cli_test {
using ::prism::testing::StatusIs;
using ::testing::HasSubstr;
using ::testing::StartsWith;

std::string Join(const std::vector<std::string>& args) {
  std::string s = "prism";
  for (const std::string& a : args) s += " " + a;
  return s;
}

// A scratch directory for files the tests write, unique per test binary run, removed at exit.
struct ScratchDir {
  std::filesystem::path path = std::filesystem::temp_directory_path() /
                               ("prism_cli_test_" + std::to_string(::getpid()));
  ScratchDir() { std::filesystem::create_directories(path); }
  ~ScratchDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
};

std::string ScratchPath(const std::string& name) {
  static const ScratchDir dir;
  return (dir.path / name).string();
}

std::string WriteScratch(const std::string& name, const std::string& contents) {
  const std::string path = ScratchPath(name);
  std::ofstream(path, std::ios::binary) << contents;
  return path;
}

// ---- the invocation table -------------------------------------------------------------------

struct Row {
  std::vector<std::string> args;
  int code;
  std::vector<std::string> out_has;  // substrings of stdout
  std::string err;                   // exact stderr ("" = must be empty)
};

void CheckRow(const Row& row) {
  SCOPED_TRACE(Join(row.args));
  const Result r = RunPrism(row.args);
  EXPECT_EQ(r.code, row.code) << "stdout:\n" << r.out << "\nstderr:\n" << r.err;
  for (const std::string& s : row.out_has) EXPECT_THAT(r.out, HasSubstr(s));
  EXPECT_EQ(r.err, row.err);
  // Errors print nothing on stdout.
  if (row.code != 0) {
    EXPECT_EQ(r.out, "");
  }
}

TEST(CliTest, TopLevel) {
  const std::vector<Row> rows = {
      {{"--help"},
       0,
       {"usage: prism <command> [options]", "  check ", "  eval ", "  workload "},
       ""},
      {{"-h"}, 0, {"usage: prism <command>"}, ""},
      {{"help"}, 0, {"usage: prism <command>"}, ""},
      {{"help", "eval"}, 0, {"usage: prism eval FILE | --workload NAME"}, ""},
      {{"--version"}, 0, {"prism 0."}, ""},
      {{}, 2, {}, "prism: error: no command given; run 'prism --help' for the list of commands\n"},
      {{"chek"}, 2, {}, "prism: error: unknown command 'chek'; did you mean 'check'?\n"},
      {{"frobnicate"},
       2,
       {},
       "prism: error: unknown command 'frobnicate'; known commands: check, eval, workload, hw, prune, check-proof, rules, search, optimize, audit, "
       "help\n"},
      {{"help", "evl"}, 2, {}, "prism: error: unknown command 'evl'; did you mean 'eval'?\n"},
      {{"help", "eval", "x"},
       2,
       {},
       "prism: error: unexpected argument 'x' for 'prism help': expected COMMAND\n"},
      {{"--hepl"},
       2,
       {},
       "prism: error: unknown option '--hepl' for 'prism'; did you mean '--help'?\n"},
      {{"--batch", "8"},
       2,
       {},
       "prism: error: unknown option '--batch' for 'prism'; run 'prism --help'; options go after "
       "the command\n"},
  };
  for (const Row& row : rows) CheckRow(row);
}

TEST(CliTest, OptionErrors) {
  const std::string no_file = ScratchPath("no_such.prism");
  const std::vector<Row> rows = {
      {{"check", "--workload", "rmsnorm_linear", "--bacth", "8"},
       2,
       {},
       "prism: error: unknown option '--bacth' for 'prism check'; did you mean '--batch'?\n"},
      {{"check", "--workload", "rmsnorm_linear", "--zzz"},
       2,
       {},
       "prism: error: unknown option '--zzz' for 'prism check'; run 'prism check --help' for the "
       "options\n"},
      {{"check", "--workload", "rmsnorm_linear", "--batch", "x"},
       2,
       {},
       "prism: error: --batch expects an integer in 1..1024, found 'x'\n"},
      {{"check", "--workload", "rmsnorm_linear", "--batch", "0"},
       2,
       {},
       "prism: error: --batch expects an integer in 1..1024, found '0'\n"},
      {{"check", "--workload", "rmsnorm_linear", "--batch=1025"},
       2,
       {},
       "prism: error: --batch expects an integer in 1..1024, found '1025'\n"},
      {{"check", "--workload", "rmsnorm_linear", "--batch", "+8"},
       2,
       {},
       "prism: error: --batch expects an integer in 1..1024, found '+8'\n"},
      {{"check", "--workload", "rmsnorm_linear", "--batch", "99999999999999999999"},
       2,
       {},
       "prism: error: --batch expects an integer in 1..1024, found '99999999999999999999'\n"},
      {{"check", "--workload", "rmsnorm_linear", "--batch"},
       2,
       {},
       "prism: error: --batch expects an integer in 1..1024, found nothing\n"},
      {{"check", "--workload", "rmsnorm_linear", "--batch", "8", "--batch", "8"},
       2,
       {},
       "prism: error: --batch given twice\n"},
      {{"check", "--workload", "rmsnorm_linear", "--json=1"},
       2,
       {},
       "prism: error: --json takes no value, found '--json=1'\n"},
      {{"check", "--workload"},
       2,
       {},
       "prism: error: --workload expects a value (NAME), found nothing\n"},
      {{"check"}, 2, {}, "prism: error: give exactly one of FILE or --workload\n"},
      {{"check", "a.prism", "--workload", "gqa"},
       2,
       {},
       "prism: error: give exactly one of FILE or --workload\n"},
      {{"check", "a.prism", "b.prism"},
       2,
       {},
       "prism: error: unexpected argument 'b.prism' for 'prism check': expected at most 1 FILE\n"},
      {{"check", no_file}, 2, {}, "prism: error: cannot open '" + no_file + "': no such file\n"},
      {{"check", "--", "--weird.prism"},
       2,
       {},
       "prism: error: cannot open '--weird.prism': no such file\n"},
      {{"check", no_file, "--batch", "8"},
       2,
       {},
       "prism: error: --batch applies only with --workload (a FILE has its own shapes)\n"},
      {{"check", "--workload", "rmsnorm", "--batch", "8"},
       2,
       {},
       "prism: error: unknown workload 'rmsnorm'; known workloads: gqa, qknorm_gqa, "
       "rmsnorm_linear, gated_mlp, lora, ntrans\n"},
      {{"check", "--workload", "rmsnorm_linear", "--target", "x"},
       2,
       {},
       "prism: error: unknown target 'x'; known targets: h200, h100_sxm, a100_80gb, l40s, "
       "rtx4090\n"},
      {{"eval", "--workload", "ntrans", "--mode", "f32"},
       2,
       {},
       "prism: error: --mode expects one of f64, device, found 'f32'\n"},
      {{"eval", "--workload", "ntrans", "--seed", "-1"},
       2,
       {},
       "prism: error: --seed expects an integer in 0..9223372036854775807, found '-1'\n"},
      {{"eval", "--workload", "ntrans", "--target", "h200"},
       2,
       {},
       "prism: error: unknown option '--target' for 'prism eval'; run 'prism eval --help' for the "
       "options\n"},
      {{"workload"},
       2,
       {},
       "prism: error: give 'list' or a workload name: prism workload list | NAME [--batch B]\n"},
      {{"workload", "list", "--batch", "2"},
       2,
       {},
       "prism: error: --batch applies only with a workload NAME, not 'list'\n"},
      {{"workload", "gqa", "lora"},
       2,
       {},
       "prism: error: unexpected argument 'lora' for 'prism workload': expected at most 1 list | "
       "NAME\n"},
      {{"workload", "lorra"},
       2,
       {},
       "prism: error: unknown workload 'lorra'; known workloads: gqa, qknorm_gqa, rmsnorm_linear, "
       "gated_mlp, lora, ntrans\n"},
  };
  for (const Row& row : rows) CheckRow(row);
}

TEST(CliTest, ReportError) {
  struct Row {
    absl::Status status;
    int code;
    std::string err;
  };
  const std::vector<Row> rows = {
      {absl::InvalidArgumentError("bad flag"), 2, "prism: error: bad flag\n"},
      {absl::NotFoundError("no file"), 2, "prism: error: no file\n"},
      {absl::UnavailableError("no GPU"), 2, "prism: error: no GPU\n"},
      {absl::InternalError("broken invariant"), 1,
       "prism: error: broken invariant (internal error INTERNAL: a bug in prism, please report "
       "it)\n"},
  };
  for (const Row& r : rows) {
    std::ostringstream err;
    EXPECT_EQ(ReportError(r.status, err), r.code) << r.status;
    EXPECT_EQ(err.str(), r.err);
  }
}

// `--help` wins over any other problem on the line, for every registered command.
TEST(CliTest, HelpOfEveryCommand) {
  for (const Command& c : Commands()) {
    const std::string path = c.spec().path;
    for (const std::vector<std::string>& args :
         {std::vector<std::string>{path, "--help"}, {path, "--bogus", "-h"}, {"help", path}}) {
      const Result r = RunPrism(args);
      EXPECT_EQ(r.code, 0) << Join(args);
      EXPECT_THAT(r.out, StartsWith("usage: prism " + path)) << Join(args);
      EXPECT_THAT(r.out, HasSubstr("--help, -h")) << Join(args);
      EXPECT_EQ(r.err, "") << Join(args);
    }
    // Every option is documented in the help.
    const Result r = RunPrism({path, "--help"});
    for (const OptionSpec& o : c.spec().options) EXPECT_THAT(r.out, HasSubstr(o.name)) << path;
    // The top-level help lists the command.
    EXPECT_THAT(RunPrism({"--help"}).out, HasSubstr("  " + path + " "));
  }
}

// ---- check ----------------------------------------------------------------------------------

TEST(CliTest, CheckRmsnormLinearB8) {
  const Result r =
      RunPrism({"check", "--workload", "rmsnorm_linear", "--batch", "8", "--target", "h200"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  for (const char* s : {"program  <builtin rmsnorm_linear b=8>\n", "matmul flops       805,306,368",
                        "min bytes moved    50,659,328", "50.66 MB", "target   h200: NVIDIA H200",
                        "floor    12.09 µs (memory-bound"}) {
    EXPECT_THAT(r.out, HasSubstr(s));
  }
  EXPECT_THAT(r.out, HasSubstr("tensors (4):\n"
                               "  tensor           op        dtype  shape\n"
                               "  X                input     f16    [16, 4096]\n"
                               "  W                input     f16    [4096, 6144]\n"
                               "  rms_norm(X, -1)  rms_norm  f16    [16, 4096]\n"
                               "  Y                matmul    f16    [16, 6144]\n"));
  EXPECT_THAT(r.out, HasSubstr("outputs (1):\n  Y  f16  [16, 6144]\n"));
}

TEST(CliTest, CheckDefaultsToBatch1AndH200) {
  const Result r = RunPrism({"check", "--workload", "rmsnorm_linear"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("<builtin rmsnorm_linear b=1>"));
  EXPECT_THAT(r.out, HasSubstr("[2, 6144]"));
  EXPECT_THAT(r.out, HasSubstr("target   h200:"));
}

TEST(CliTest, CheckJson) {
  const Result r = RunPrism({"check", "--workload", "rmsnorm_linear", "--batch=8", "--json"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  const nlohmann::json j = nlohmann::json::parse(r.out, nullptr, /*allow_exceptions=*/false);
  ASSERT_FALSE(j.is_discarded()) << r.out;
  EXPECT_EQ(j["program"], "<builtin rmsnorm_linear b=8>");
  EXPECT_EQ(j["structural_hash"].get<std::string>().size(), 16u);
  ASSERT_EQ(j["tensors"].size(), 4u);
  EXPECT_EQ(j["tensors"][2]["expr"], "rms_norm(X, -1)");
  EXPECT_EQ(j["tensors"][2]["name"], "");
  EXPECT_EQ(j["tensors"][2]["op"], "rms_norm");
  EXPECT_EQ(j["tensors"][3]["shape"], nlohmann::json({16, 6144}));
  ASSERT_EQ(j["outputs"].size(), 1u);
  EXPECT_EQ(j["outputs"][0]["name"], "Y");
  EXPECT_EQ(j["outputs"][0]["dtype"], "f16");
  EXPECT_EQ(j["outputs"][0]["shape"], nlohmann::json({16, 6144}));
  EXPECT_EQ(j["stats"]["matmul_flops"].get<double>(), 2.0 * 16 * 4096 * 6144);
  EXPECT_EQ(j["stats"]["min_bytes"].get<double>(), 2.0 * (16 * 4096 + 4096 * 6144 + 16 * 6144));
  EXPECT_EQ(j["target"]["name"], "h200");
  EXPECT_EQ(j["target"]["dram_bytes_per_s"].get<double>(), 4.19e12);
  EXPECT_NEAR(j["roofline"]["floor_us"].get<double>(), 12.09, 0.01);
  EXPECT_EQ(j["roofline"]["bound"], "memory");
}

TEST(CliTest, CheckKnowsTheTheoriesTargets) {
  // `prism check --target` and the commands that load smt_theories/hardware/ accept the same
  // names (targets.h says why the numbers differ).
  ASSERT_OK_AND_ASSIGN(std::vector<std::string> theories, ListTargets());
  std::vector<std::string> names;
  for (const TargetSpec& t : BuiltinTargets()) names.push_back(t.name);
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names, theories);
}

TEST(CliTest, CheckEveryTarget) {
  // gqa at b = 1: two batched matmuls of 2·2·256·4096·64 flops; Q, Kt, V read and O written.
  const double flops = 2 * (2.0 * 2 * 256 * 4096 * 64);
  const double bytes = 2.0 * (2 * 256 * 64 + 2 * 64 * 4096 + 2 * 4096 * 64 + 2 * 256 * 64);
  for (const TargetSpec& t : BuiltinTargets()) {
    const Result r = RunPrism({"check", "--workload", "gqa", "--target", t.name, "--json"});
    ASSERT_EQ(r.code, 0) << t.name << ": " << r.err;
    const nlohmann::json j = nlohmann::json::parse(r.out);
    EXPECT_EQ(j["target"]["name"], t.name);
    const double memory_us = bytes / t.dram_bytes_per_s * 1e6;
    const double compute_us = flops / t.matmul_flops_per_s * 1e6;
    EXPECT_NEAR(j["roofline"]["floor_us"].get<double>(), std::max(memory_us, compute_us), 1e-9)
        << t.name;
    EXPECT_EQ(j["roofline"]["bound"], memory_us >= compute_us ? "memory" : "compute") << t.name;
  }
}

TEST(CliTest, CheckFileAndJsonFile) {
  const std::string prism_path = WriteScratch(
      "small.prism",
      "# a small program\nX = input f32[2, 3]\nY = scale(exp(X), 0.5)  # half\noutput Y\n");
  Result r = RunPrism({"check", prism_path});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("program  " + prism_path + "\n"));
  EXPECT_THAT(r.out, HasSubstr("  exp(X)  exp    f32    [2, 3]\n"));
  EXPECT_THAT(r.out, HasSubstr("  Y       scale  f32    [2, 3]\n"));

  // The same program as a JSON export is accepted when the file name ends in .json.
  ASSERT_OK_AND_ASSIGN(Program p, BuiltinWorkload("lora", 1));
  const std::string json_path = WriteScratch("lora.json", ProgramToJson(p).dump());
  r = RunPrism({"check", json_path, "--json"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out)["outputs"][0]["shape"], nlohmann::json({1, 4096}));

  const std::string bad_json = WriteScratch("bad.json", "{\"format\": ");
  r = RunPrism({"check", bad_json});
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, StartsWith("prism: error: " + bad_json + ": "));
  EXPECT_EQ(r.out, "");
}

// Malformed files: exit 2 and a FILE:LINE:COL: message on stderr, nothing on stdout.
TEST(CliTest, CheckMalformedFiles) {
  struct Bad {
    std::string name, text, where;
  };
  const std::vector<Bad> rows = {
      {"unknown_op.prism", "X = input f16[4, 4]\nY = matmull(X, X)\noutput Y\n", ":2:5: "},
      {"shape.prism", "X = input f16[4, 8]\nW = input f16[4, 8]\nY = matmul(X, W)\noutput Y\n",
       ":3:"},
      {"undefined.prism", "X = input f16[4, 4]\nY = exp(Z)\noutput Y\n", ":2:9: "},
      {"bad_dtype.prism", "X = input f17[4, 4]\noutput X\n", ":1:11: "},
  };
  for (const Bad& b : rows) {
    const std::string path = WriteScratch(b.name, b.text);
    const Result r = RunPrism({"check", path});
    EXPECT_EQ(r.code, 2) << b.name;
    EXPECT_THAT(r.err, StartsWith("prism: error: " + path + b.where)) << b.name;
    EXPECT_EQ(r.out, "") << b.name;
    // The same error under --json: still only stderr.
    const Result rj = RunPrism({"check", path, "--json"});
    EXPECT_EQ(rj.code, 2);
    EXPECT_EQ(rj.out, "");
    EXPECT_EQ(rj.err, r.err);
  }
}

// Every example file checks clean, and agrees with its built-in workload.
TEST(CliTest, CheckEveryExample) {
  for (const std::string& name : WorkloadNames()) {
    for (int batch : {1, 8}) {
      const std::string path = std::string(PRISM_SOURCE_DIR) + "/examples/" + name + "_b" +
                               std::to_string(batch) + ".prism";
      const Result file = RunPrism({"check", path, "--json"});
      ASSERT_EQ(file.code, 0) << file.err;
      const Result builtin =
          RunPrism({"check", "--workload", name, "--batch", std::to_string(batch), "--json"});
      ASSERT_EQ(builtin.code, 0) << builtin.err;
      nlohmann::json a = nlohmann::json::parse(file.out), b = nlohmann::json::parse(builtin.out);
      a.erase("program");
      b.erase("program");
      EXPECT_EQ(a, b) << path;
    }
  }
}

// ---- eval -----------------------------------------------------------------------------------

TEST(CliTest, EvalText) {
  const Result r = RunPrism({"eval", "--workload", "ntrans", "--seed", "7"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  EXPECT_THAT(r.out, HasSubstr("program  <builtin ntrans b=1>\nmode     f64\n"
                               "inputs   N(0, 1), seed 7, rounded to each input's dtype\n"));
  EXPECT_THAT(r.out, HasSubstr("\noutput Y  f16 [1, 4096]\n  checksum  "));
  EXPECT_THAT(r.out, HasSubstr("\n  nan       0\n  inf       0\n"));
}

nlohmann::json EvalJson(std::vector<std::string> args) {
  args.insert(args.begin(), "eval");
  args.push_back("--json");
  const Result r = RunPrism(args);
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  const nlohmann::json j = nlohmann::json::parse(r.out, nullptr, false);
  EXPECT_FALSE(j.is_discarded()) << r.out;
  return j;
}

TEST(CliTest, EvalJsonIsDeterministicAndSeeded) {
  const nlohmann::json a = EvalJson({"--workload", "ntrans", "--seed", "3"});
  const nlohmann::json b = EvalJson({"--workload", "ntrans", "--seed", "3"});
  const nlohmann::json c = EvalJson({"--workload", "ntrans", "--seed", "4"});
  EXPECT_EQ(a, b);
  ASSERT_EQ(a["outputs"].size(), 1u);
  EXPECT_NE(a["outputs"][0]["checksum"], c["outputs"][0]["checksum"]);
  EXPECT_EQ(a["mode"], "f64");
  EXPECT_EQ(a["seed"], 3);
  const nlohmann::json& o = a["outputs"][0];
  EXPECT_EQ(o["name"], "Y");
  EXPECT_EQ(o["shape"], nlohmann::json({1, 4096}));
  EXPECT_EQ(o["nan_count"], 0);
  EXPECT_EQ(o["inf_count"], 0);
  EXPECT_LT(o["min"].get<double>(), o["mean"].get<double>());
  EXPECT_LT(o["mean"].get<double>(), o["max"].get<double>());
  // An rms-normed row of 4096 values has |x| ≤ sqrt(4096) = 64.
  EXPECT_LE(o["max"].get<double>(), 64.0);
}

TEST(CliTest, EvalDeviceModeIsCloseToF64) {
  // Device mode rounds to f16 at every op and accumulates in f32: its extremes stay within f16
  // precision (about 0.1 %) of the f64 oracle's; its mean within a small fraction of the range.
  for (const char* workload : {"lora", "rmsnorm_linear"}) {
    SCOPED_TRACE(workload);
    const nlohmann::json f64 = EvalJson({"--workload", workload, "--mode", "f64"});
    const nlohmann::json dev = EvalJson({"--workload", workload, "--mode", "device"});
    EXPECT_EQ(dev["mode"], "device");
    const nlohmann::json& a = f64["outputs"][0];
    const nlohmann::json& b = dev["outputs"][0];
    const double range = a["max"].get<double>() - a["min"].get<double>();
    ASSERT_GT(range, 0);
    for (const char* key : {"min", "max"}) {
      EXPECT_NEAR(a[key].get<double>(), b[key].get<double>(), 0.005 * range) << key;
    }
    EXPECT_NEAR(a["mean"].get<double>(), b["mean"].get<double>(), 1e-3 * range);
  }
}

TEST(CliTest, EvalHandComputedSummaries) {
  // sub(X, X) is exactly zero everywhere; div(X, 0) is ±inf for nonzero X; 0/0 is NaN.
  const std::string zeros =
      WriteScratch("zeros.prism", "X = input f32[3, 5]\nY = sub(X, X)\noutput Y\n");
  nlohmann::json j = EvalJson({zeros});
  EXPECT_EQ(j["program"], zeros);
  const nlohmann::json& z = j["outputs"][0];
  EXPECT_EQ(z["checksum"], 0.0);
  EXPECT_EQ(z["min"], 0.0);
  EXPECT_EQ(z["max"], 0.0);
  EXPECT_EQ(z["mean"], 0.0);

  const std::string infs =
      WriteScratch("infs.prism",
                   "X = input f32[4, 4]\nZ = div(X, sub(X, X))\nN = div(sub(X, X), sub(X, X))\n"
                   "output Z\noutput N\n");
  j = EvalJson({infs});
  ASSERT_EQ(j["outputs"].size(), 2u);
  EXPECT_EQ(j["outputs"][0]["name"], "Z");
  EXPECT_EQ(j["outputs"][0]["inf_count"], 16);
  EXPECT_EQ(j["outputs"][0]["nan_count"], 0);
  EXPECT_EQ(j["outputs"][1]["nan_count"], 16);
  // NaN values are counted, not summed: all-NaN leaves the sums at 0.
  EXPECT_EQ(j["outputs"][1]["checksum"], 0.0);

  const Result r = RunPrism({"eval", infs});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("\n  inf       16\n"));
  EXPECT_THAT(r.out, HasSubstr("\n  nan       16\n"));
}

// ---- workload -------------------------------------------------------------------------------

TEST(CliTest, WorkloadListAndText) {
  Result r = RunPrism({"workload", "list"});
  ASSERT_EQ(r.code, 0);
  for (const std::string& name : WorkloadNames()) {
    EXPECT_THAT(r.out, HasSubstr(name + "  ")) << name;
  }
  r = RunPrism({"workload", "list", "--json"});
  ASSERT_EQ(r.code, 0);
  const nlohmann::json list = nlohmann::json::parse(r.out);
  ASSERT_EQ(list.size(), WorkloadNames().size());
  EXPECT_EQ(list[0]["name"], "gqa");
  EXPECT_EQ(list[0]["description"], WorkloadDescription("gqa"));

  for (const std::string& name : WorkloadNames()) {
    r = RunPrism({"workload", name, "--batch", "8"});
    ASSERT_EQ(r.code, 0) << r.err;
    EXPECT_EQ(r.out, *WorkloadText(name, 8));
  }
  EXPECT_EQ(RunPrism({"workload", "gqa"}).out, *WorkloadText("gqa", 1));
  EXPECT_THAT(RunPrism({"workload", "gqa", "--batch", "8"}).out,
              HasSubstr("Q = input f16[16, 256, 64]\n"));
}

TEST(CliTest, WorkloadJsonRoundTrips) {
  const Result r = RunPrism({"workload", "qknorm_gqa", "--batch", "8", "--json"});
  ASSERT_EQ(r.code, 0) << r.err;
  ASSERT_OK_AND_ASSIGN(Program from_json, ProgramFromJsonText(r.out));
  ASSERT_OK_AND_ASSIGN(Program builtin, BuiltinWorkload("qknorm_gqa", 8));
  EXPECT_EQ(from_json.StructuralHash(), builtin.StructuralHash());
}

// ---- the option parser on its own -----------------------------------------------------------

CommandSpec TestSpec() {
  CommandSpec s;
  s.path = "demo";
  s.positional = "FILE";
  s.max_positional = 2;
  s.options = {IntOption("--count", "N", "how many", -5, 5), FlagOption("--json", "json"),
               ChoiceOption("--mode", "M", "mode", {"a", "b"}),
               StringOption("--name", "NAME", "a name")};
  return s;
}

TEST(OptionsTest, AcceptedForms) {
  const CommandSpec spec = TestSpec();
  const std::vector<std::string> args = {"f1",     "--count", "-5", "--mode=b", "--json",
                                         "--name", "--x",     "--", "--f2"};
  ASSERT_OK_AND_ASSIGN(ParsedArgs a, ParseArgs(spec, args));
  EXPECT_FALSE(a.help());
  EXPECT_EQ(a.Int("--count"), -5);
  EXPECT_EQ(a.String("--mode"), "b");
  EXPECT_EQ(a.String("--name"), "--x");  // a value may start with dashes
  EXPECT_TRUE(a.Flag("--json"));
  EXPECT_FALSE(a.Has("--nothing"));
  EXPECT_EQ(a.Int("--nothing"), std::nullopt);
  EXPECT_THAT(a.positionals(), ::testing::ElementsAre("f1", "--f2"));
  // A lone "-" is a positional (conventionally stdin), not an option.
  ASSERT_OK_AND_ASSIGN(ParsedArgs b, ParseArgs(spec, std::vector<std::string>{"-"}));
  EXPECT_THAT(b.positionals(), ::testing::ElementsAre("-"));
  // "--help" after "--" is a positional, not a request for help.
  ASSERT_OK_AND_ASSIGN(ParsedArgs c, ParseArgs(spec, std::vector<std::string>{"--", "--help"}));
  EXPECT_FALSE(c.help());
}

TEST(OptionsTest, Errors) {
  const CommandSpec spec = TestSpec();
  struct Row {
    std::vector<std::string> args;
    std::string message;
  };
  const std::vector<Row> rows = {
      {{"--cuont", "1"}, "unknown option '--cuont' for 'prism demo'; did you mean '--count'?"},
      {{"--count", "6"}, "--count expects an integer in -5..5, found '6'"},
      {{"--count", "1.5"}, "--count expects an integer in -5..5, found '1.5'"},
      {{"--count", " 1"}, "--count expects an integer in -5..5, found ' 1'"},
      {{"--count="}, "--count expects an integer in -5..5, found ''"},
      {{"--mode", "c"}, "--mode expects one of a, b, found 'c'"},
      {{"--name="}, "--name expects a value (NAME), found ''"},
      {{"a", "b", "c"}, "unexpected argument 'c' for 'prism demo': expected at most 2 FILE"},
      {{"--json", "--json"}, "--json given twice"},
      {{"-j"}, "unknown option '-j' for 'prism demo'; run 'prism demo --help' for the options"},
  };
  for (const Row& r : rows) {
    EXPECT_THAT(ParseArgs(spec, r.args),
                StatusIs(absl::StatusCode::kInvalidArgument, ::testing::Eq(r.message)))
        << Join(r.args);
  }
}

TEST(OptionsTest, HelpText) {
  const std::string help = HelpText(TestSpec());
  EXPECT_EQ(help,
            "usage: prism demo\n"
            "\n"
            "options:\n"
            "  --count N    how many (-5..5)\n"
            "  --json       json\n"
            "  --mode M     mode (a | b)\n"
            "  --name NAME  a name\n"
            "  --help, -h   show this help and exit\n");
}

TEST(FormatTest, AssignmentsInParameterOrder) {
  SGraph g("g");
  ASSERT_OK(g.AddParam("gx", ParamRole::kGrid, *Domain::DivisorsOf(64)).status());
  ASSERT_OK(g.AddParam("F", ParamRole::kForloop, *Domain::DivisorsOf(64)).status());
  ASSERT_OK(g.AddParam("T", ParamRole::kThreads, *Domain::Set({64, 128})).status());
  struct Row {
    Assignment a;
    std::string text, json;
  };
  const std::vector<Row> rows = {
      {{{"T", 128}, {"gx", 8}, {"F", 4}}, "gx=8 F=4 T=128", R"({"gx":8,"F":4,"T":128})"},
      {{{"F", 2}}, "F=2", R"({"F":2})"},
      {{{"unknown", 1}}, "", "{}"},
      {{}, "", "{}"},
  };
  for (const Row& r : rows) {
    EXPECT_EQ(AssignmentText(g, r.a), r.text);
    EXPECT_EQ(AssignmentJson(g, r.a).dump(), r.json);
  }
}

TEST(OptionsTest, EditDistanceAndClosestMatch) {
  struct Row {
    const char* a;
    const char* b;
    int distance;
  };
  const std::vector<Row> rows = {
      {"", "", 0},          {"abc", "abc", 0},      {"bacth", "batch", 1},
      {"batch", "btch", 1}, {"batch", "batchh", 1}, {"kitten", "sitting", 3},
      {"", "abc", 3},       {"ab", "ba", 1},
  };
  for (const Row& r : rows) EXPECT_EQ(EditDistance(r.a, r.b), r.distance) << r.a << " " << r.b;
  const std::vector<std::string> names = {"--batch", "--target", "--json", "--workload"};
  EXPECT_EQ(ClosestMatch("--bacth", names), "--batch");
  EXPECT_EQ(ClosestMatch("--taget", names), "--target");
  EXPECT_EQ(ClosestMatch("--workloads", names), "--workload");
  EXPECT_EQ(ClosestMatch("--zzz", names), "");
  EXPECT_EQ(ClosestMatch("--js", names), "");  // too short to guess from
  EXPECT_EQ(ClosestMatch("x", names), "");
}

}  // namespace cli_test
}  // namespace prism::cli
