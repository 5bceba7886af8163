// Checks every library-kernel test shares (codegen_test.cc's concat and fibre
// tests, library_ops_test.cc): the launch, arguments, signature, launch.json,
// host.h and determinism of a one-kernel program. Part of codegen_test.
#ifndef PRISM_TESTS_CODEGEN_LIBRARY_CHECKS_H_
#define PRISM_TESTS_CODEGEN_LIBRARY_CHECKS_H_

#include <array>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "prism/codegen/codegen.h"
#include "testing/status_matchers.h"

namespace prism::codegen::library_checks {

// Occurrences of `needle` in `hay` (overlapping ones too).
inline int LibraryCount(const std::string& hay, const std::string& needle) {
  int n = 0;
  for (size_t at = hay.find(needle); at != std::string::npos; at = hay.find(needle, at + 1)) ++n;
  return n;
}

// The device element type of `dtype` in generated code.
inline std::string LibraryElem(DType dtype) {
  return dtype == DType::kF32    ? "float"
         : dtype == DType::kBF16 ? "prism_dev::bf16_t"
                                 : "prism_dev::f16_t";
}

// What every library kernel shares (concat, fibre ops, matmul, elementwise
// ops), per PDL setting: one launch of `threads` threads (256 but for the
// tensor-core matmul's 128) on `grid`, no dynamic shared memory,
// `static_smem_bytes` as the audit's model (reduction_bytes), the arguments
// `args` (the last written), the kernel's signature, launch.json, host.h, and
// byte-identical output when generated again.
inline void ExpectLibraryLaunch(const BlockProgram& p, const CodegenOptions& options,
                                const GeneratedCode& code, const std::string& function,
                                const std::array<int64_t, 3>& grid,
                                const std::vector<std::string>& args, DType dtype,
                                int64_t static_smem_bytes = 0, int64_t threads = 256) {
  const bool pdl = options.programmatic_dependent_launch;
  ASSERT_EQ(code.launches.size(), 1u);
  const LaunchConfig& l = code.launches[0];
  EXPECT_EQ(l.kernel, "k0");
  EXPECT_EQ(l.function, function);
  EXPECT_EQ(l.grid, grid);
  EXPECT_EQ(l.threads, threads);
  EXPECT_EQ(l.cluster, (std::array<int64_t, 3>{1, 1, 1}));
  EXPECT_EQ(l.programmatic, pdl);
  EXPECT_EQ(l.dynamic_smem_bytes, 0);
  EXPECT_EQ(l.residency_pad_bytes, 0);
  EXPECT_EQ(l.stage_bytes, 0);
  EXPECT_EQ(l.reduction_bytes,
            static_smem_bytes);  // the audit's model of the static tiles
  EXPECT_EQ(l.accumulator_regs, 0);
  std::vector<std::string> names, params, host_params;
  std::vector<bool> written;
  for (size_t i = 0; i < l.args.size(); ++i) {
    const std::string& name = p.tensors[l.args[i]].name;
    const bool last = i + 1 == l.args.size();
    names.push_back(name);
    written.push_back(last);
    params.push_back(
        absl::StrCat(last ? "" : "const ", LibraryElem(dtype), "* __restrict__ t_", name));
    host_params.push_back(absl::StrCat(last ? "" : "const ", "void* t_", name));
  }
  EXPECT_EQ(names, args);
  EXPECT_EQ(l.written, written);
  EXPECT_THAT(code.source, ::testing::HasSubstr(
                               absl::StrCat("extern \"C\" __global__ void __launch_bounds__(", threads, ") ",
                                            function, "(", absl::StrJoin(params, ", "), ") {\n")));
  const std::string body = code.source.substr(code.source.find("// kernel k0:"));
  EXPECT_EQ(LibraryCount(body, "  prism_dev::PdlPrologue();"), pdl ? 1 : 0);
  // launch.json and host.h.
  const nlohmann::json j = nlohmann::json::parse(code.launch_json);
  const nlohmann::json& k = j["kernels"][0];
  EXPECT_EQ(k["function"], function);
  EXPECT_EQ(k["grid"], nlohmann::json(grid));
  EXPECT_EQ(k["block"], nlohmann::json({threads, int64_t{1}, int64_t{1}}));
  EXPECT_EQ(k["dynamic_smem_bytes"], 0);
  EXPECT_EQ(k.contains("programmatic_dependent_launch"), pdl);
  ASSERT_EQ(k["args"].size(), args.size());
  for (size_t i = 0; i < args.size(); ++i) {
    EXPECT_EQ(k["args"][i]["tensor"], args[i]);
    EXPECT_EQ(k["args"][i]["dtype"], std::string(DTypeName(dtype)));
    EXPECT_EQ(k["args"][i]["access"], i + 1 == args.size() ? "write" : "read");
  }
  EXPECT_THAT(code.host_header,
              ::testing::HasSubstr(absl::StrCat("inline cudaError_t Launch_k0(",
                                                absl::StrJoin(host_params, ", "),
                                                ", cudaStream_t stream = 0) {\n")));
  EXPECT_EQ(LibraryCount(code.host_header, "cudaLaunchAttributeProgrammaticStreamSerialization"),
            pdl ? 1 : 0);
  EXPECT_EQ(
      LibraryCount(code.host_header, absl::StrCat(function, "<<<dim3(", grid[0], ", ", grid[1],
                                                  ", ", grid[2], "), dim3(", threads, "), 0, ")),
      pdl ? 0 : 1);
  ASSERT_OK_AND_ASSIGN(GeneratedCode again, GenerateCuda(p, options));
  EXPECT_EQ(again.source, code.source);  // deterministic
  EXPECT_EQ(again.launch_json, code.launch_json);
  EXPECT_EQ(again.host_header, code.host_header);
}

}  // namespace prism::codegen::library_checks

#endif  // PRISM_TESTS_CODEGEN_LIBRARY_CHECKS_H_
