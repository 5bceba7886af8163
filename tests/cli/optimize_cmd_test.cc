// `prism optimize` in-process through RunCli with --no-gpu (the cost model selects): text and
// JSON output, the files written (and the default --out), and the error paths by exact message.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "cli/run_prism.h"
#include "tools/cli.h"

namespace prism::cli {
// Named, not anonymous: with PRISM_UNITY_BUILD the nine files share one translation unit.
namespace optimize_cmd_test {

// What `prism optimize` says of Y = X·W with W f16 [64, 12]: every family fails codegen, each
// distinct reason once with the families it stopped, then the tensors whose rows are not whole
// 16-byte chunks (search::RowAlignmentHint).
const std::string kNarrowMatmulError =
    "no family can be generated as CUDA yet: 11 families tried; codegen: kernel k0, op v2 "
    "(matmul): matmul operands must be loop input tiles (or, for A, elementwise ops of such "
    "tiles) (families #1, #3, #5, #7); codegen: kernel k0, op v1 (input): tile rows must be "
    "whole 16-byte chunks (columns a multiple of 8) (families #2, #4, #6, #8); codegen: kernel "
    "k0, op v0 (input): tile rows must be whole 16-byte chunks (columns a multiple of 8) "
    "(families #9-#11); W f16[64, 12], Y f16[4, 12] have rows that are not whole 16-byte "
    "chunks, which the kernels load and store: make the last dims multiples of 16 bytes (8 "
    "elements of f16 or bf16), e.g. by padding with zeros where the program allows";
using ::testing::HasSubstr;
using ::testing::StartsWith;

std::string Tmp(const std::string& name) {
  const std::string d =
      ::testing::TempDir() + "/prism_opt_" + name + "_" + std::to_string(getpid());
  std::filesystem::remove_all(d);
  std::filesystem::create_directories(d);
  return d;
}

// A file's whole text ("" when it cannot be read).
std::string ReadText(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// `text` written to DIR/p.prism (DIR = Tmp(name)) and `prism optimize` run on it without a GPU
// into DIR/out, the search unbudgeted.
struct OptimizeRun {
  std::string dir, path;
  Result r;
};
OptimizeRun OptimizeText(const std::string& name, const std::string& text) {
  OptimizeRun run;
  run.dir = Tmp(name);
  run.path = run.dir + "/p.prism";
  std::ofstream(run.path) << text;
  run.r = RunPrismUnbudgeted({"optimize", run.path, "--no-gpu", "--out", run.dir + "/out"});
  return run;
}

// A small rmsnorm_linear (search and codegen well under a second).
std::string SmallProgram(const std::string& dir) {
  const std::string path = dir + "/small.prism";
  std::ofstream(path) << "X = input f16[4, 128]\nW = input f16[128, 64]\n"
                         "Y = matmul(rms_norm(X, -1), W)\noutput Y\n";
  return path;
}

TEST(OptimizeCliTest, TextSaysTheCostModelSelectedAndWritesTheFiles) {
  const std::string dir = Tmp("text");
  const Result r = RunPrismUnbudgeted({"optimize", SmallProgram(dir), "--no-gpu", "--out", dir + "/out"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  for (const std::string& s :
       {std::string("program   ") + dir + "/small.prism\n",
        std::string("device    none (--no-gpu)\n"),
        std::string("selected  family #"), std::string(" (1 kernel) at "),
        std::string("cost lower bound "),
        std::string(" µs, estimate "),
        // The estimate's terms: one kernel, its launch plus the rest, the binding term.
        std::string("\n          estimate  k0: "),
        std::string("selected by the cost model's estimate, not measured (no GPU: --no-gpu)"),
        "wrote     " + dir + "/out/{kernel.cu, launch.json, host.h, family.json}\n"}) {
    EXPECT_THAT(r.out, HasSubstr(s));
  }
  for (const char* f : {"kernel.cu", "launch.json", "host.h", "family.json"}) {
    EXPECT_TRUE(std::filesystem::is_regular_file(dir + "/out/" + f)) << f;
  }
  // The kernels are named after the file (small.prism): prism_small_k0.
  std::ifstream in(dir + "/out/launch.json");
  std::stringstream launch;
  launch << in.rdbuf();
  EXPECT_THAT(launch.str(), HasSubstr("\"function\": \"prism_small_k0\""));
  std::filesystem::remove_all(dir);
}

// Programs of one or two plain ops, each of which `prism optimize` must turn into CUDA: a
// plain matmul had no family codegen could generate (only the whole-K tile), so it failed
// with "no family can be generated as CUDA yet", and mul(X, X) had no family at all
// (2026-12-05). Row reductions and softmax had families but no template ("the pointwise
// template supports only ..."), batched matmuls failed with "only rank-2 tiles are supported",
// and a scale had no family.
TEST(OptimizeCliTest, PlainProgramsGenerate) {
  const struct {
    const char* name;
    const char* text;
    const char* selected;  // a substring of the "selected" line
    const char* code = "";  // a substring of kernel.cu, when not the default below
  } kCases[] = {
      {"gemv", "X = input f16[8, 1024]\nW = input f16[1024, 512]\nY = matmul(X, W)\noutput Y\n",
       " (1 kernel) at gx="},
      {"square_by_mul", "X = input f16[8, 256]\nY = mul(X, X)\noutput Y\n", " (1 kernel) at "},
      {"relu_gemv",
       "X = input f16[4, 256]\nW = input f16[256, 128]\nY = relu(matmul(X, W))\noutput Y\n",
       "selected  family #"},
      {"softmax", "X = input f16[8, 4096]\nY = softmax(X, -1)\noutput Y\n", " (1 kernel) at ",
       "2 row pass(es) (max, sum) over "},
      {"row_sum", "X = input f32[32, 1000]\nY = sum(X, -1)\noutput Y\n", " (1 kernel) at ",
       "1 row pass(es) (sum) over "},
      // A scale by a constant, as an epilogue of a GEMM.
      {"scaled_gemv",
       "X = input f16[8, 1024]\nW = input f16[1024, 512]\nY = scale(matmul(X, W), 0.125)\noutput Y\n",
       "selected  family #", " = 0.125f * v"},
      // A linear layer over a batch of rows (one W): the rows of all batches as one matrix.
      {"linear_over_rows",
       "X = input f16[8, 1, 1024]\nW = input f16[1024, 512]\nY = matmul(X, W)\noutput Y\n",
       "selected  family #", "MmaM16N8K16("},
      // A batched matmul, on the rank-2 view of its tensors (the batch split over the grid).
      {"batched_matmul",
       "X = input f16[8, 64, 128]\nW = input f16[8, 128, 64]\nY = matmul(X, W)\noutput Y\n",
       " (1 kernel) at gx=8 ", "MmaM16N8K16("},
      {"row_max", "X = input f16[4, 2048]\nY = max(X, -1)\noutput Y\n", " (1 kernel) at ",
       "1 row pass(es) (max) over "},
      {"row_mean", "X = input f32[8, 1000]\nY = mean(X, -1)\noutput Y\n", " (1 kernel) at ",
       " / 1000.0f;  // v2 (div_count)"},
      // rms_norm with Llama's eps (the search generated 1e-6 alone).
      {"rms_eps_1e5",
       "X = input f16[2, 4096]\nW = input f16[4096, 1024]\n"
       "Y = matmul(rms_norm(X, -1, eps=1e-5), W)\noutput Y\n",
       "selected  family #", " + 9.99999975e-06f"},
      // An activation on the matmul's A operand, applied to each X tile in the loop.
      {"silu_gemv",
       "X = input f16[8, 1024]\nW = input f16[1024, 512]\nY = matmul(silu(X), W)\noutput Y\n",
       "selected  family #", " (silu) on the A fragment"},
      // SwiGLU's down projection: both tiles combined on the A fragments.
      {"swiglu_down",
       "G = input f16[8, 2048]\nU = input f16[8, 2048]\nW = input f16[2048, 1024]\n"
       "Y = matmul(mul(silu(G), U), W)\noutput Y\n",
       "selected  family #", " (mul) on the A fragment"},
      // Matmuls of f32 tensors (FMAs on the CUDA cores) and of bf16 tensors.
      {"f32_gemv", "X = input f32[4, 64]\nW = input f32[64, 32]\nY = matmul(X, W)\noutput Y\n",
       "selected  family #", "FmaTilesF32(acc"},
      {"bf16_gemv",
       "X = input bf16[8, 1024]\nW = input bf16[1024, 512]\nY = matmul(X, W)\noutput Y\n",
       " (1 kernel) at gx=", "MmaM16N8K16BF16("},
      // A linear layer's bias row and a residual, read by the GEMM's epilogue (no family
      // sliced them with the columns before 2026-12-05; the bias search took minutes).
      {"bias_gemv",
       "X = input f16[8, 1024]\nW = input f16[1024, 512]\nB = input f16[1, 512]\n"
       "Y = add(matmul(X, W), B)\noutput Y\n",
       " (1 kernel) at gx=", "F16ToF32(t_B[(long long)(0LL + 0) * 512LL + "},
      {"residual_gemv",
       "X = input f16[8, 1024]\nW = input f16[1024, 512]\nR = input f16[8, 512]\n"
       "Y = add(matmul(X, W), R)\noutput Y\n",
       "selected  family #", "F16ToF32(t_R[(long long)("},
      // Llama's RMSNorm with its gain before a linear layer: the gain row on the A fragments
      // (the estimate picks a split-K family, whose partial kernel reads the gain the same way).
      {"rms_gain_gemv",
       "X = input f16[2, 4096]\nG = input f16[1, 4096]\nW = input f16[4096, 1024]\n"
       "Y = matmul(mul(rms_norm(X, -1), G), W)\noutput Y\n",
       "selected  family #", "LoadARowFragment(l1, "},
      // The same in f32: the prologue where the CUDA cores' FMAs read A.
      {"rms_gain_f32",
       "X = input f32[2, 4096]\nG = input f32[1, 4096]\nW = input f32[4096, 1024]\n"
       "Y = matmul(mul(rms_norm(X, -1), G), W)\noutput Y\n",
       "selected  family #", "FmaTilesF32Fn(acc"},
  };
  for (const auto& c : kCases) {
    SCOPED_TRACE(c.name);
    const OptimizeRun run = OptimizeText(c.name, c.text);
    ASSERT_EQ(run.r.code, 0) << run.r.err;
    EXPECT_THAT(run.r.out, HasSubstr(c.selected));
    const std::string src = ReadText(run.dir + "/out/kernel.cu");
    if (*c.code != '\0') {
      EXPECT_THAT(src, HasSubstr(c.code));
    } else if (absl::StrContains(c.text, "matmul")) {
      EXPECT_THAT(src, HasSubstr("MmaM16N8K16(")) << "a tensor-core GEMM kernel";
    } else {
      EXPECT_THAT(src, HasSubstr(" = v0 * v0;  // v1 (mul)"));
    }
    std::filesystem::remove_all(run.dir);
  }
}

// A matmul of a wide matmul (an MLP's up and down projections): no family of the whole
// program can be generated (each would keep the [M, 2048] intermediate whole in a block), so
// the program is cut at the down projection's operand and each part optimized and proved
// alone, in DIR/H and DIR/Y (2026-12-05: an error before). Llama's gated MLP, three matmuls, is
// cut once: gate and up in the first part (gated_mlp's structure), down in the second.
TEST(OptimizeCliTest, AChainOfMatmulsIsSplitInTwo) {
  const struct {
    const char* name;
    const char* text;
    const char* split;  // the "split" line
    const char* first_code;  // a substring of H's kernel.cu
  } kCases[] = {
      {"mlp",
       "X = input f16[8, 1024]\nW1 = input f16[1024, 2048]\nW2 = input f16[2048, 1024]\n"
       "Y = matmul(gelu(matmul(X, W1)), W2)\noutput Y\n",
       "split     no family of the whole program can be generated; H f16[8, 2048] (line 4) is "
       "computed by a first program and Y from it by a second, each optimized and proved alone\n",
       "Gelu("},
      {"llama_mlp",
       "X = input f16[1, 1024]\nWg = input f16[1024, 2816]\nWu = input f16[1024, 2816]\n"
       "Wd = input f16[2816, 1024]\nY = matmul(mul(silu(matmul(X, Wg)), matmul(X, Wu)), Wd)\n"
       "output Y\n",
       "split     no family of the whole program can be generated; H f16[1, 2816] (line 5) is "
       "computed by a first program and Y from it by a second, each optimized and proved alone\n",
       "Silu("},
  };
  for (const auto& c : kCases) {
    SCOPED_TRACE(c.name);
    const OptimizeRun run = OptimizeText(c.name, c.text);
    ASSERT_EQ(run.r.code, 0) << run.r.err;
    EXPECT_THAT(run.r.out, HasSubstr(c.split));
    EXPECT_THAT(run.r.out, HasSubstr("\npart      1 of 2: H\nprogram   " + run.path + " part H\n"));
    EXPECT_THAT(run.r.out, HasSubstr("\npart      2 of 2: Y\nprogram   " + run.path + " part Y\n"));
    for (const char* part : {"H", "Y"}) {
      for (const char* file : {"kernel.cu", "launch.json", "host.h", "proof.json"}) {
        EXPECT_TRUE(std::filesystem::is_regular_file(run.dir + "/out/" + part + "/" + file))
            << part << "/" << file;
      }
    }
    EXPECT_THAT(ReadText(run.dir + "/out/H/kernel.cu"), HasSubstr(c.first_code));
    // The second part reads H as an input; split.json lists the parts in launch order.
    EXPECT_THAT(ReadText(run.dir + "/out/Y/launch.json"), HasSubstr("\"tensor\": \"H\""));
    EXPECT_THAT(run.r.out, HasSubstr("\nwrote     " + run.dir +
                                     "/out/split.json (the parts in launch order: H first, then Y "
                                     "from it)\n"));
    const nlohmann::json split = nlohmann::json::parse(ReadText(run.dir + "/out/split.json"));
    EXPECT_EQ(split["format"], "prism.split");
    EXPECT_EQ(split["cut"]["tensor"], "H");
    ASSERT_EQ(split["parts"].size(), 2u);
    EXPECT_EQ(split["parts"][0]["dir"], "H");
    EXPECT_EQ(split["parts"][0]["outputs"], nlohmann::json::array({"H"}));
    EXPECT_EQ(split["parts"][1]["dir"], "Y");
    EXPECT_EQ(split["parts"][1]["outputs"], nlohmann::json::array({"Y"}));
    const nlohmann::json& second_in = split["parts"][1]["inputs"];
    EXPECT_NE(std::find(second_in.begin(), second_in.end(), "H"), second_in.end());
    std::filesystem::remove_all(run.dir);
  }
  // --json: the parts under "split_at" and "parts".
  const std::string dir = Tmp("mlp_json");
  std::ofstream(dir + "/p.prism") << kCases[0].text;
  const Result r = RunPrismUnbudgeted(
      {"optimize", dir + "/p.prism", "--no-gpu", "--out", dir + "/out", "--json"});
  ASSERT_EQ(r.code, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["split_at"], "H");
  ASSERT_EQ(j["parts"].size(), 2u);
  EXPECT_EQ(j["parts"][0]["out"], dir + "/out/H");
  EXPECT_EQ(j["parts"][1]["out"], dir + "/out/Y");
  std::filesystem::remove_all(dir);
}

// A concat inside a computation, and a reduction over another dim than the last, run as
// kernels of their own (2026-12-06: "the search found no family for this program" before): the
// program is cut at the op (a matmul of a concat of inputs; exp of a column sum) or at the op's
// computed operand (an output that is a concat), each part optimized and proved alone; the op
// of inputs is one library kernel (a copy, a reduction).
TEST(OptimizeCliTest, ALibraryOpIsCutOutAndRunsAsAKernelOfItsOwn) {
  const struct {
    const char* name;
    const char* text;
    const char* split;  // the "split" line
    const char* first, *second;
    const char* library_part;  // the part that is the op's library kernel
    const char* op;            // its op, as family.json names it
  } kCases[] = {
      {"cat_matmul",
       "X = input f16[8, 256]\nH = input f16[8, 64]\nW = input f16[320, 128]\n"
       "Y = matmul(concat(X, H, -1), W)\noutput Y\n",
       "split     a concat runs as a kernel of its own; C f16[8, 320] (line 4) is computed by a "
       "first program and Y from it by a second, each optimized and proved alone\n",
       "C", "Y", "C", "concat"},
      {"cat_out",
       "A = input f16[8, 128]\nB = input f16[8, 64]\nY = concat(silu(A), B, -1)\noutput Y\n",
       "split     a concat runs as a kernel of its own; C f16[8, 128] (line 3) is computed by a "
       "first program and Y from it by a second, each optimized and proved alone\n",
       "C", "Y", "Y", "concat"},
      {"column_sum",
       "X = input f16[64, 128]\nY = exp(sum(X, 0))\noutput Y\n",
       "split     a sum over dim 0 runs as a kernel of its own; R f16[1, 128] (line 2) is "
       "computed by a first program and Y from it by a second, each optimized and proved alone\n",
       "R", "Y", "R", "sum"},
  };
  for (const auto& c : kCases) {
    SCOPED_TRACE(c.name);
    const OptimizeRun run = OptimizeText(c.name, c.text);
    ASSERT_EQ(run.r.code, 0) << run.r.err;
    EXPECT_THAT(run.r.out, HasSubstr(c.split));
    for (const char* part : {c.first, c.second}) {
      for (const char* file : {"kernel.cu", "launch.json", "host.h", "proof.json"}) {
        EXPECT_TRUE(std::filesystem::is_regular_file(run.dir + "/out/" + part + "/" + file))
            << part << "/" << file;
      }
    }
    const nlohmann::json family =
        nlohmann::json::parse(ReadText(run.dir + "/out/" + c.library_part + "/family.json"));
    EXPECT_THAT(family.dump(), HasSubstr(c.op));
    const nlohmann::json split = nlohmann::json::parse(ReadText(run.dir + "/out/split.json"));
    EXPECT_EQ(split["cut"]["tensor"], c.first);
    EXPECT_EQ(split["parts"][0]["dir"], c.first);
    EXPECT_EQ(split["parts"][1]["dir"], c.second);
    // Each part's report re-checks.
    for (const char* part : {c.first, c.second}) {
      const Result audit = RunPrism({"audit", run.dir + "/out/" + part});
      EXPECT_EQ(audit.code, 0) << part << "\n" << audit.out << audit.err;
    }
    std::filesystem::remove_all(run.dir);
  }
}

// The fallback (2026-12-06; "no family" errors before, which --no-fallback still gives): a
// program that is one op of its inputs and has no block-graph family that generates runs as
// that op's library kernel (the "fallback" line says why); a larger one is cut (at a matmul,
// else before the output's op) until its parts generate. Every part's report re-checks.
TEST(OptimizeCliTest, TheFallbackRunsWhatNoFamilyGeneratesAsLibraryKernels) {
  const struct {
    const char* name;
    const char* text;
    const char* cut;       // the start of the cut's "fallback" line, "" for none
    const char* split;     // the "split" line after it
    const char* fallback;  // the start of a library kernel's "fallback" line
    std::vector<std::string> parts;  // the directories with kernels ("" : out/ itself)
  } kCases[] = {
      // A matmul of 12 columns (rows of 24 bytes): kNarrowMatmulError with --no-fallback.
      {"narrow", "A = input f16[4, 64]\nW = input f16[64, 12]\nY = matmul(A, W)\noutput Y\n", "", "",
       "fallback  Y (matmul) runs as one library kernel: no family can be generated as CUDA yet: "
       "11 families tried; ",
       {""}},
      // No dimension mapping validates: cut before the output's op.
      {"unmapped", "X = input f32[4, 1]\nY = sub(max(X, -1), X)\noutput Y\n",
       "fallback  the program is cut: the search found no family for this program; its 4 complete "
       "structures had no dimension mapping that validates (2 map choices built)\n",
       "split     no family of the whole program can be generated; P f32[4, 1] (line 2) is "
       "computed by a first program and Y from it by a second, each optimized and proved alone\n",
       "fallback  P (max) runs as one library kernel: no family can be generated as CUDA yet: ",
       {"P", "Y"}},
      // A batched matmul of odd shapes with an epilogue: cut at the matmul.
      {"batched", "X = input f32[3, 2, 6]\nW = input f32[6, 1]\nY = scale(matmul(X, W), 0.001)\n"
                  "output Y\n",
       "fallback  the program is cut: no family can be generated as CUDA yet: 12 families tried; ",
       "split     no family of the whole program can be generated; P f32[3, 2, 1] (line 3) is "
       "computed by a first program and Y from it by a second, each optimized and proved alone\n",
       "fallback  P (matmul) runs as one library kernel: ", {"P", "Y"}},
  };
  for (const auto& c : kCases) {
    SCOPED_TRACE(c.name);
    const OptimizeRun run = OptimizeText(c.name, c.text);
    ASSERT_EQ(run.r.code, 0) << run.r.err;
    if (*c.cut != '\0') {  // the reason, then the split line
      const size_t at = run.r.out.find(c.cut);
      ASSERT_NE(at, std::string::npos) << run.r.out;
      const size_t next = run.r.out.find('\n', at) + 1;
      EXPECT_EQ(run.r.out.substr(next, std::strlen(c.split)), c.split) << run.r.out;
    }
    EXPECT_THAT(run.r.out, HasSubstr(c.fallback)) << run.r.out;
    for (const std::string& part : c.parts) {
      const std::string d = part.empty() ? run.dir + "/out" : run.dir + "/out/" + part;
      for (const char* file : {"kernel.cu", "launch.json", "host.h", "proof.json"}) {
        EXPECT_TRUE(std::filesystem::is_regular_file(d + "/" + file)) << d << "/" << file;
      }
      const Result audit = RunPrism({"audit", d});
      EXPECT_EQ(audit.code, 0) << d << "\n" << audit.out << audit.err;
    }
    std::filesystem::remove_all(run.dir);
  }
  // --json names the reason in "fallback".
  const std::string dir = Tmp("fallback_json");
  std::ofstream(dir + "/n.prism") << kCases[0].text;
  const Result j =
      RunPrismUnbudgeted({"optimize", dir + "/n.prism", "--no-gpu", "--json", "--out", dir + "/o"});
  ASSERT_EQ(j.code, 0) << j.err;
  const nlohmann::json parsed = nlohmann::json::parse(j.out);
  EXPECT_THAT(parsed["fallback"].get<std::string>(),
              StartsWith("no family can be generated as CUDA yet: 11 families tried; "));
  EXPECT_EQ(parsed["selected"]["kernels"], 1);
  // ... and in the cut's "fallback" when it cuts.
  std::ofstream(dir + "/b.prism") << kCases[2].text;
  const Result jb =
      RunPrismUnbudgeted({"optimize", dir + "/b.prism", "--no-gpu", "--json", "--out", dir + "/b"});
  ASSERT_EQ(jb.code, 0) << jb.err;
  const nlohmann::json cut = nlohmann::json::parse(jb.out);
  EXPECT_EQ(cut["split_at"], "P");
  EXPECT_THAT(cut["fallback"].get<std::string>(),
              StartsWith("no family can be generated as CUDA yet: 12 families tried; "));
  ASSERT_EQ(cut["parts"].size(), 2u);
  EXPECT_THAT(cut["parts"][0]["fallback"].get<std::string>(),
              StartsWith("no family can be generated as CUDA yet: "));
  EXPECT_FALSE(cut["parts"][1].contains("fallback"));
  std::filesystem::remove_all(dir);
}

// Attention written the usual way, scores scaled before the softmax: no family before
// 2026-12-05 (scale was not in the search's vocabulary), then none generated (the attention
// template wanted exp of a matmul), and its search spent its budget on random tests.
TEST(OptimizeCliTest, ScaledAttentionGenerates) {
  const std::string dir = Tmp("scaled_attention");
  const std::string path = dir + "/attn.prism";
  std::ofstream(path) << "Q = input f16[4, 16, 64]\nKt = input f16[4, 64, 512]\n"
                         "V = input f16[4, 512, 64]\n"
                         "O = matmul(softmax(scale(matmul(Q, Kt), 0.125), -1), V)\noutput O\n";
  const Result r = RunPrismUnbudgeted({"optimize", path, "--no-gpu", "--out", dir + "/out"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr(" (2 kernels) at "));
  std::ifstream in(dir + "/out/kernel.cu");
  std::stringstream src;
  src << in.rdbuf();
  EXPECT_THAT(src.str(), HasSubstr("attention template"));
  EXPECT_THAT(src.str(), HasSubstr("kLog2e = 0.180336878f;  // log2(e) · the score scale 0.125f"));
  std::filesystem::remove_all(dir);
}

// A program with several outputs: each output's program alone (OutputCone) in DIR/<output>,
// kernels prism_<file>_<output>_k0; --json gives one object per output; an output that fails
// names itself. Before 2026-12-05: "search supports programs with one output".
TEST(OptimizeCliTest, SeveralOutputsOneProgramEach) {
  const std::string dir = Tmp("outputs");
  const std::string path = dir + "/qks.prism";
  std::ofstream(path) << "X = input f16[8, 1024]\nWq = input f16[1024, 512]\n"
                         "Wk = input f16[1024, 256]\nQ = matmul(X, Wq)\nK = matmul(X, Wk)\n"
                         "S = softmax(X, -1)\noutput Q\noutput K\noutput S\n";
  const Result r = RunPrismUnbudgeted({"optimize", path, "--no-gpu", "--out", dir + "/out"});
  ASSERT_EQ(r.code, 0) << r.err;
  for (const char* s : {"output    Q (1 of 3)\nprogram   ", "output    K (2 of 3)\n",
                        "output    S (3 of 3)\n"}) {
    EXPECT_THAT(r.out, HasSubstr(s));
  }
  for (const std::string o : {"Q", "K", "S"}) {
    std::ifstream in(dir + "/out/" + o + "/launch.json");
    std::stringstream launch;
    launch << in.rdbuf();
    EXPECT_THAT(launch.str(), HasSubstr("\"function\": \"prism_qks_" + o + "_k0\"")) << o;
    EXPECT_TRUE(std::filesystem::is_regular_file(dir + "/out/" + o + "/report.json")) << o;
  }
  const Result j = RunPrismUnbudgeted({"optimize", path, "--no-gpu", "--json", "--out", dir + "/j"});
  ASSERT_EQ(j.code, 0) << j.err;
  const nlohmann::json parsed = nlohmann::json::parse(j.out);
  ASSERT_EQ(parsed["outputs"].size(), 3u);
  EXPECT_EQ(parsed["outputs"][1]["program"], path + " output K");
  EXPECT_EQ(parsed["outputs"][2]["out"], dir + "/j/S");

  const std::string bad = dir + "/bad.prism";
  std::ofstream(bad) << "X = input f16[8, 1024]\nA = input f16[4, 64]\nW = input f16[64, 12]\n"
                        "S = softmax(X, -1)\nY = matmul(A, W)\noutput S\noutput Y\n";
  const Result e =
      RunPrismUnbudgeted({"optimize", bad, "--no-gpu", "--no-fallback", "--out", dir + "/bad"});
  EXPECT_EQ(e.code, 2);
  EXPECT_EQ(e.err,
            "prism: error: output Y: " + kNarrowMatmulError + "\n");
  std::filesystem::remove_all(dir);
}

TEST(OptimizeCliTest, JsonAndTheDefaultOutputDirectory) {
  const std::string dir = Tmp("json");
  const std::string program = SmallProgram(dir);
  const std::filesystem::path cwd = std::filesystem::current_path();
  std::filesystem::current_path(dir);
  const Result r = RunPrismUnbudgeted({"optimize", program, "--no-gpu", "--json"});
  std::filesystem::current_path(cwd);
  ASSERT_EQ(r.code, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["selection"], "cost model");
  EXPECT_EQ(j["no_gpu_reason"], "--no-gpu");
  EXPECT_EQ(j["out"], "prism-out/small");
  // The selection is the candidate with the lowest estimate (they all compile).
  double lowest = 1e30;
  for (const nlohmann::json& c : j["candidates"]) lowest = std::min(lowest, c["estimate_us"].get<double>());
  EXPECT_EQ(j["selected"]["estimate_us"].get<double>(), lowest);
  // Its terms: "k0: <launch> + <rest> µs (memory: ... | compute: ...)", the rest and the launch
  // adding up to the estimate (to the printed two decimals).
  const std::string terms = j["selected"]["estimate_terms"].get<std::string>();
  double launch = 0, rest = 0;
  ASSERT_EQ(std::sscanf(terms.c_str(), "k0: %lf + %lf", &launch, &rest), 2) << terms;
  EXPECT_NEAR(launch + rest, lowest, 0.011) << terms;
  EXPECT_THAT(terms, ::testing::AnyOf(HasSubstr(" (memory: "), HasSubstr(" (compute: ")));
  EXPECT_EQ(terms.find(" | "), std::string::npos) << "one kernel: " << terms;
  EXPECT_GE(j["selected"]["family"].get<int>(), 1);
  EXPECT_TRUE(j["selected"]["assignment"].is_object());
  EXPECT_TRUE(j["selected"]["cost_us"].is_number());
  EXPECT_TRUE(j["codegen_skips"].is_array());
  EXPECT_GE(j["candidates"].size(), 1u);
  EXPECT_TRUE(std::filesystem::is_regular_file(dir + "/prism-out/small/kernel.cu"));
  std::filesystem::remove_all(dir);
}

// Inputs of lower rank that binary ops broadcast (a bias f16[N], RMSNorm's gain f16[K]) are
// read at their users' rank: a "view" line says so, the kernel's argument has the padded shape.
// Until 2026-12-05 such programs ended with "the search found no family for this program; b
// f16[64] is broadcast against rank 2 by add (line 3): declare it as f16[1, 64] ...".
TEST(OptimizeCliTest, ALowerRankBroadcastInputIsReadAtItsUsersRank) {
  const struct {
    const char* name;
    const char* text;
    const char* view;
    const char* arg;  // in launch.json
  } kCases[] = {
      {"bias", "X = input f16[4, 64]\nb = input f16[64]\nY = add(X, b)\noutput Y\n",
       "view      b f16[64] as f16[1, 64] (the same elements: its users broadcast it at that "
       "rank; pass the same buffer)\n",
       "\"tensor\": \"b\",\n     \"dtype\": \"f16\",\n     \"shape\": [\n      1,\n      64\n     ]"},
      {"gain",
       "X = input f16[2, 256]\nG = input f16[256]\nW = input f16[256, 128]\n"
       "Y = matmul(mul(rms_norm(X, -1), G), W)\noutput Y\n",
       "view      G f16[256] as f16[1, 256] (the same elements: its users broadcast it at that "
       "rank; pass the same buffer)\n",
       "\"tensor\": \"G\",\n     \"dtype\": \"f16\",\n     \"shape\": [\n      1,\n      256\n     ]"},
  };
  for (const auto& c : kCases) {
    SCOPED_TRACE(c.name);
    const OptimizeRun run = OptimizeText(c.name, c.text);
    ASSERT_EQ(run.r.code, 0) << run.r.err;
    EXPECT_THAT(run.r.out, StartsWith(c.view));
    EXPECT_THAT(ReadText(run.dir + "/out/launch.json"), HasSubstr(c.arg));
    std::filesystem::remove_all(run.dir);
  }
  // Two outputs that need V at ranks 2 and 3: each output's own program reads it at its rank.
  const OptimizeRun run = OptimizeText(
      "two_ranks",
      "X = input f16[8, 32]\nT = input f16[2, 8, 32]\nV = input f16[32]\n"
      "Y = add(X, V)\nZ = add(T, V)\noutput Y\noutput Z\n");
  ASSERT_EQ(run.r.code, 0) << run.r.err;
  EXPECT_THAT(run.r.out, HasSubstr("output    Y (1 of 2)\nview      V f16[32] as f16[1, 32] "));
  EXPECT_THAT(run.r.out, HasSubstr("output    Z (2 of 2)\nview      V f16[32] as f16[1, 1, 32] "));
  // --json: each output's object lists its padded inputs.
  const Result j = RunPrismUnbudgeted({"optimize", run.path, "--no-gpu", "--json", "--out",
                                       run.dir + "/json"});
  ASSERT_EQ(j.code, 0) << j.err;
  const nlohmann::json parsed = nlohmann::json::parse(j.out);
  EXPECT_EQ(parsed["outputs"][1]["padded_inputs"],
            nlohmann::json::parse(R"([{"tensor": "V", "declared": [32], "read_as": [1, 1, 32]}])"));
  std::filesystem::remove_all(run.dir);
}

struct ErrorCase {
  std::vector<std::string> args;
  int code;
  std::string err_prefix;
};

// --constant-inputs: each part of a cut program gets the declared inputs it reads; their
// prologue loads precede the PDL wait in its kernel, the others' follow it, and the summary
// and --json say which inputs are read early (without the option the source is unchanged:
// codegen_test's ConstantInputsLoadBeforeTheWait).
TEST(OptimizeCliTest, ConstantInputsAreLoadedBeforeTheWait) {
  const std::string dir = Tmp("constant");
  const std::string path = dir + "/mlp.prism";
  std::ofstream(path) << "X = input f16[1, 256]\nWg = input f16[256, 512]\n"
                         "Wu = input f16[256, 512]\nWd = input f16[512, 256]\n"
                         "Y = matmul(mul(silu(matmul(X, Wg)), matmul(X, Wu)), Wd)\noutput Y\n";
  const Result r = RunPrismUnbudgeted({"optimize", path, "--no-gpu", "--out", dir + "/out",
                                       "--constant-inputs", "Wd,Wg"});
  ASSERT_EQ(r.code, 0) << r.err;
  const std::string note =
      ": read before the wait for the previous kernel (programmatic dependent launch); no "
      "kernel before this program in the stream may write it\n";
  EXPECT_THAT(r.out, HasSubstr("\nconstant  Wg" + note));
  EXPECT_THAT(r.out, HasSubstr("\nconstant  Wd" + note));
  EXPECT_LT(r.out.find("constant  Wg"), r.out.find("part      2 of 2: Y"));
  EXPECT_GT(r.out.find("constant  Wd"), r.out.find("part      2 of 2: Y"));
  const std::string h = ReadText(dir + "/out/H/kernel.cu");
  const std::string y = ReadText(dir + "/out/Y/kernel.cu");
  for (const std::string* src : {&h, &y}) {
    const size_t wait = src->find("  prism_dev::PdlWait();");
    ASSERT_NE(wait, std::string::npos);
    EXPECT_LT(src->find("  prism_dev::PdlLaunchDependents();"), wait);
    EXPECT_LT(src->find("if (st < kF) load_early(st, st);"), wait);
    EXPECT_GT(src->find("if (st < kF) load_late(st, st);"), wait);
  }
  // H: Wg early; X and Wu (not declared) late. Y: Wd early; H, written by part H's kernel
  // just before, late.
  auto lambda = [](const std::string& src, const std::string& name) {
    const size_t at = src.find("  auto " + name + " = ");
    return src.substr(at, src.find("  };\n", at) - at);
  };
  EXPECT_THAT(lambda(h, "load_early"), HasSubstr("t_Wg + "));
  EXPECT_THAT(lambda(h, "load_early"), ::testing::Not(HasSubstr("t_Wu + ")));
  EXPECT_THAT(lambda(h, "load_late"), HasSubstr("t_Wu + "));
  EXPECT_THAT(lambda(h, "load_late"), HasSubstr("t_X + "));
  EXPECT_THAT(lambda(y, "load_early"), HasSubstr("t_Wd + "));
  EXPECT_THAT(lambda(y, "load_late"), HasSubstr("t_H + "));
  const Result j = RunPrismUnbudgeted({"optimize", path, "--no-gpu", "--out", dir + "/json",
                                       "--constant-inputs", "Wd,Wg", "--json"});
  ASSERT_EQ(j.code, 0) << j.err;
  const nlohmann::json parts = nlohmann::json::parse(j.out)["parts"];
  ASSERT_EQ(parts.size(), 2u) << j.out;
  EXPECT_EQ(parts[0]["constant_inputs"], nlohmann::json({"Wg"}));
  EXPECT_EQ(parts[1]["constant_inputs"], nlohmann::json({"Wd"}));
  std::filesystem::remove_all(dir);
}

TEST(OptimizeCliTest, ErrorsByExactMessage) {
  const std::string dir = Tmp("err");
  std::ofstream(dir + "/file") << "x";
  const std::string program = SmallProgram(dir);
  const std::string narrow = dir + "/narrow.prism";
  std::ofstream(narrow) << "X = input f16[4, 64]\nW = input f16[64, 12]\nY = matmul(X, W)\n"
                           "output Y\n";
  // max over a dim of one element, less X: identically 0, and no structure of it maps. Until
  // 2026-12-05 (seventh session) the error ended at "for this program", with no reason.
  const std::string unmapped = dir + "/unmapped.prism";
  std::ofstream(unmapped) << "X = input f32[4, 1]\nY = sub(max(X, -1), X)\noutput Y\n";
  // No template takes rows of 32769 f16, and the fallback's matmul indexes with 32 bits.
  const std::string huge = dir + "/huge.prism";
  std::ofstream(huge) << "A = input f16[65536, 32769]\nB = input f16[32769, 8]\n"
                         "Y = matmul(A, B)\noutput Y\n";
  const ErrorCase cases[] = {
      {{"optimize", program, "--gpu", "0", "--no-gpu"},
       2,
       "prism: error: give at most one of --gpu or --no-gpu\n"},
      {{"optimize", "--workload", "nope", "--no-gpu"}, 2, "prism: error: unknown workload 'nope'"},
      // A matmul of 12 columns: its tiles' rows are not whole 16-byte chunks.
      {{"optimize", narrow, "--no-gpu", "--no-fallback", "--out", dir + "/narrow"},
       2,
       "prism: error: " + kNarrowMatmulError + "\n"},
      {{"optimize", unmapped, "--no-gpu", "--no-fallback", "--out", dir + "/unmapped"},
       2,
       "prism: error: the search found no family for this program; its 4 complete structures "
       "had no dimension mapping that validates (2 map choices built)\n"},
      {{"optimize", program, "--no-gpu", "--out", dir + "/file/out"},
       2,
       "prism: error: cannot create the output directory '" + dir + "/file/out': "},
      {{"optimize", program, "--top", "0", "--no-gpu"}, 2, "prism: error: "},
      {{"optimize", program, "--refine", "9", "--no-gpu"},
       2,
       "prism: error: --refine expects an integer in 0..8, found '9'\n"},
      {{"optimize", program, "--tune-budget-s", "-1", "--no-gpu"},
       2,
       "prism: error: --tune-budget-s expects an integer in 0..3600, found '-1'\n"},
      {{"optimize", program, "--constant-inputs", "Z", "--no-gpu"},
       2,
       "prism: error: --constant-inputs: 'Z' is not an input of the program (inputs: X, W)\n"},
      {{"optimize", program, "--constant-inputs", "W,,X", "--no-gpu"},
       2,
       "prism: error: --constant-inputs 'W,,X': an empty name; give input names separated by "
       "commas, e.g. --constant-inputs W,A\n"},
      {{"optimize", program, "--constant-inputs", "W,W", "--no-gpu"},
       2,
       "prism: error: --constant-inputs: 'W' is named twice\n"},
      {{"optimize", program, "--constant-inputs", "", "--no-gpu"},
       2,
       "prism: error: --constant-inputs expects a value (NAMES), found ''\n"},
  };
  for (const ErrorCase& c : cases) {
    SCOPED_TRACE(c.args[1] + " " + c.args[2]);
    const Result r = RunPrismUnbudgeted(c.args);
    EXPECT_EQ(r.code, c.code) << r.err;
    EXPECT_THAT(r.err, StartsWith(c.err_prefix));
    EXPECT_EQ(r.out, "");
  }
  // The fallback fails too: the no-family error, then why the library kernel failed.
  const Result h = RunPrismUnbudgeted({"optimize", huge, "--no-gpu", "--out", dir + "/huge"});
  EXPECT_EQ(h.code, 2) << h.err;
  EXPECT_THAT(h.err, StartsWith("prism: error: no family can be generated as CUDA yet: 2 families "
                                "tried; "));
  EXPECT_THAT(h.err, ::testing::EndsWith(
                         "; nor as a library kernel: no family can be generated as CUDA yet: 1 "
                         "family tried; codegen: kernel k0: matmul operand A [65536, 32769] has "
                         "more than 2147483647 elements (the kernel indexes with 32 bits) "
                         "(family #1)\n"));
  std::filesystem::remove_all(dir);
}

}  // namespace optimize_cmd_test
}  // namespace prism::cli
