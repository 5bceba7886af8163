// codegen_emit FIXTURE BATCH name=value,... OUTDIR
//   [SUFFIX [TILES_PER_WARP [PIPELINE [LAZY [EXP16 [CLUSTER [PDL [WGMMA [WARPS_ALONG_N
//   [DEFER_CHAINED [CHAINED_B_SMEM]]]]]]]]]]]
// Instantiates a fixture (fixtures.h, or a split form of split_fixtures.h: gated_mlp_splitk,
// lora_splitk, lora_split_xa, rmsnorm_linear_split) at its workload's WORKLOADS.md sizes for BATCH
// (a lib_<op> fixture of split_fixtures.h at the sizes of the name=value list), generates
// CUDA and writes OUTDIR/kernel.cu, OUTDIR/launch.json and OUTDIR/host.h (OUTDIR is created). TILES_PER_WARP sets CodegenOptions::attention_tiles_per_warp, PIPELINE (0 or
// 1) attention_pipeline, LAZY (0 or 1) attention_lazy_rescale, EXP16 (0 or 1)
// attention_exp_f16x2, CLUSTER (0 or 1) cluster_combine, PDL (0 or 1)
// programmatic_dependent_launch, WGMMA (0 or 1) attention_wgmma, WARPS_ALONG_N (0 or 1)
// gemm_warps_along_n, DEFER_CHAINED (0 or 1) gemm_defer_chained, CHAINED_B_SMEM (0 or 1)
// gemm_chained_b_smem. Environment PRISM_EMIT_BALANCE=SMS,SMEM_PER_SM,RESERVED sets
// balance_residency as the tuner does for a target (the H200: 132,233472,1024);
// PRISM_EMIT_WGMMA_LOOP=late_loads,split_pv sets the attention_wgmma loop options;
// PRISM_EMIT_LIB_SPLIT=0, 1 or 2 sets library_matmul_cluster_split (2: with
// library_matmul_split_blocks_per_sm = 2);
// PRISM_EMIT_DTYPE=bf16 or f32 makes the fixture's f16 tensors that type (WithDType). Exit 1
// with the status on error (Unimplemented included).
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <system_error>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "block/fixtures/fixtures.h"
#include "codegen/split_fixtures.h"
#include "prism/block/block_instance.h"
#include "prism/codegen/codegen.h"

int main(int argc, char** argv) {
  using namespace prism;
  if (argc < 5) {
    std::fprintf(stderr,
                 "usage: codegen_emit FIXTURE BATCH name=value,... OUTDIR [SUFFIX "
                 "[TILES_PER_WARP [PIPELINE [LAZY [EXP16 [CLUSTER [PDL [WGMMA [WARPS_ALONG_N [DEFER_CHAINED [CHAINED_B_SMEM]]]]]]]]]]]\n");
    return 2;
  }
  int batch = 0;
  if (!absl::SimpleAtoi(argv[2], &batch)) return 2;
  Assignment a;
  for (absl::string_view kv : absl::StrSplit(argv[3], ',', absl::SkipEmpty())) {
    std::pair<std::string, std::string> p = absl::StrSplit(kv, absl::MaxSplits('=', 1));
    int64_t v = 0;
    if (!absl::SimpleAtoi(p.second, &v)) return 2;
    a[p.first] = v;
  }
  const std::string name = argv[1];
  absl::StatusOr<fixtures::Fixture> f = fixtures::MakeFixture(name, fixtures::WorkloadSizes(name, batch));
  if (absl::IsNotFound(f.status())) {
    const std::string workload = name.substr(0, name.find("_split"));
    // lib_<op> fixtures take their sizes from the name=value list (no workload has them).
    const fixtures::Sizes sizes = name.rfind("lib_", 0) == 0
                                      ? fixtures::Sizes(a.begin(), a.end())
                                      : fixtures::WorkloadSizes(workload, batch);
    f = codegen_test::MakeSplitFixture(name, sizes);
    if (name.rfind("lib_", 0) == 0) a.clear();
  }
  if (const char* d = std::getenv("PRISM_EMIT_DTYPE"); d != nullptr && f.ok()) {
    const std::optional<DType> dtype = ParseDType(d);
    if (!dtype.has_value()) {
      std::fprintf(stderr, "codegen_emit: PRISM_EMIT_DTYPE must be f16, bf16 or f32\n");
      return 2;
    }
    f = codegen_test::WithDType(*std::move(f), *dtype);
  }
  if (!f.ok()) {
    std::fprintf(stderr, "%s\n", f.status().ToString().c_str());
    return 1;
  }
  absl::StatusOr<BlockProgram> p = Instantiate(f->graph, a);
  if (!p.ok()) {
    std::fprintf(stderr, "%s\n", p.status().ToString().c_str());
    return 1;
  }
  codegen::CodegenOptions opts;
  if (argc > 5) opts.name_suffix = argv[5];
  if (argc > 6 && !absl::SimpleAtoi(argv[6], &opts.attention_tiles_per_warp)) return 2;
  if (argc > 7) opts.attention_pipeline = std::string(argv[7]) == "1";
  if (argc > 8) opts.attention_lazy_rescale = std::string(argv[8]) == "1";
  if (argc > 9) opts.attention_exp_f16x2 = std::string(argv[9]) == "1";
  if (argc > 10) opts.cluster_combine = std::string(argv[10]) == "1";
  if (argc > 11) opts.programmatic_dependent_launch = std::string(argv[11]) == "1";
  if (argc > 12) opts.attention_wgmma = std::string(argv[12]) == "1";
  if (argc > 13) opts.gemm_warps_along_n = std::string(argv[13]) == "1";
  if (argc > 14) opts.gemm_defer_chained = std::string(argv[14]) == "1";
  if (argc > 15) opts.gemm_chained_b_smem = std::string(argv[15]) == "1";
  if (const char* w = std::getenv("PRISM_EMIT_WGMMA_LOOP"); w != nullptr) {
    for (absl::string_view o : absl::StrSplit(w, ',', absl::SkipEmpty())) {
      if (o == "late_loads") {
        opts.attention_wgmma_late_loads = true;
      } else if (o == "split_pv") {
        opts.attention_wgmma_split_pv = true;
      } else {
        std::fprintf(stderr,
                     "codegen_emit: PRISM_EMIT_WGMMA_LOOP takes late_loads, split_pv\n");
        return 2;
      }
    }
  }
  if (const char* l = std::getenv("PRISM_EMIT_LIB_SPLIT"); l != nullptr) {
    if (std::string(l) != "0" && std::string(l) != "1" && std::string(l) != "2") {
      std::fprintf(stderr, "codegen_emit: PRISM_EMIT_LIB_SPLIT must be 0, 1 or 2\n");
      return 2;
    }
    opts.library_matmul_cluster_split = std::string(l) != "0";
    opts.library_matmul_split_blocks_per_sm = std::string(l) == "2" ? 2 : 1;
  }
  if (const char* b = std::getenv("PRISM_EMIT_BALANCE"); b != nullptr) {
    const std::vector<std::string> f = absl::StrSplit(b, ',');
    if (f.size() != 3 || !absl::SimpleAtoi(f[0], &opts.balance_residency.sms) ||
        !absl::SimpleAtoi(f[1], &opts.balance_residency.smem_per_sm) ||
        !absl::SimpleAtoi(f[2], &opts.balance_residency.smem_reserved_per_block)) {
      std::fprintf(stderr, "codegen_emit: PRISM_EMIT_BALANCE must be SMS,SMEM_PER_SM,RESERVED\n");
      return 2;
    }
  }
  absl::StatusOr<codegen::GeneratedCode> code = codegen::GenerateCuda(*p, opts);
  if (!code.ok()) {
    std::fprintf(stderr, "%s\n", code.status().ToString().c_str());
    return 1;
  }
  const std::string dir = argv[4];
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  for (const auto& [file, text] : {std::pair<const char*, const std::string*>{"kernel.cu", &code->source},
                                   {"launch.json", &code->launch_json},
                                   {"host.h", &code->host_header}}) {
    const std::string path = dir + "/" + file;
    std::ofstream out(path);
    out << *text;
    if (!out.flush()) {
      std::fprintf(stderr, "codegen_emit: cannot write '%s'\n", path.c_str());
      return 1;
    }
  }
  return 0;
}
