// NVRTC wrapper (nvrtc.h). The NVRTC library is linked only when
// PRISM_WITH_CUDA is on; it needs no GPU and no driver (libcuda is never
// linked).
#include "prism/codegen/nvrtc.h"

#include <cstdlib>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

#if PRISM_WITH_CUDA
#include <nvrtc.h>
#endif

namespace prism::codegen {
namespace {

// The integer just before `suffix` in `line` ("... 40 registers" → 40), or -1.
int64_t NumberBefore(absl::string_view line, absl::string_view suffix) {
  const size_t pos = line.find(suffix);
  if (pos == absl::string_view::npos) return -1;
  size_t end = pos;
  while (end > 0 && line[end - 1] == ' ') --end;
  size_t begin = end;
  while (begin > 0 && line[begin - 1] >= '0' && line[begin - 1] <= '9') --begin;
  int64_t v = -1;
  if (begin == end || !absl::SimpleAtoi(line.substr(begin, end - begin), &v)) return -1;
  return v;
}

}  // namespace

std::vector<CompiledKernelInfo> ParsePtxasReport(absl::string_view log) {
  std::vector<CompiledKernelInfo> out;
  CompiledKernelInfo* cur = nullptr;
  for (absl::string_view line : absl::StrSplit(log, '\n')) {
    const size_t entry = line.find("Compiling entry function '");
    if (entry != absl::string_view::npos) {
      absl::string_view rest = line.substr(entry + 26);
      out.emplace_back();
      out.back().function = std::string(rest.substr(0, rest.find('\'')));
      cur = &out.back();
      continue;
    }
    if (cur == nullptr) continue;
    if (absl::StrContains(line, "bytes stack frame")) {
      cur->stack_frame_bytes = NumberBefore(line, "bytes stack frame");
      cur->spill_store_bytes = NumberBefore(line, "bytes spill stores");
      cur->spill_load_bytes = NumberBefore(line, "bytes spill loads");
    } else if (absl::StrContains(line, "Used ") && absl::StrContains(line, "registers")) {
      cur->registers = NumberBefore(line, "registers");
      const int64_t smem = NumberBefore(line, "bytes smem");
      cur->static_smem_bytes = smem < 0 ? 0 : smem;
    }
  }
  return out;
}

#if PRISM_WITH_CUDA

bool NvrtcAvailable() { return true; }

absl::StatusOr<std::string> NvrtcVersion() {
  int major = 0, minor = 0;
  if (nvrtcVersion(&major, &minor) != NVRTC_SUCCESS) {
    return absl::UnavailableError("nvrtcVersion failed");
  }
  return absl::StrCat(major, ".", minor);
}

absl::StatusOr<NvrtcResult> CompileWithNvrtc(absl::string_view source, int sm) {
  nvrtcProgram prog;
  const std::string src(source);
  nvrtcResult rc = nvrtcCreateProgram(&prog, src.c_str(), "kernel.cu", 0, nullptr, nullptr);
  if (rc != NVRTC_SUCCESS) {
    return absl::InternalError(absl::StrCat("nvrtcCreateProgram: ", nvrtcGetErrorString(rc)));
  }
  // sm_90 compiles for sm_90a: its arch-specific instructions (wgmma, used by
  // CodegenOptions::attention_wgmma) are available, and the cubin runs on compute capability
  // 9.0 exactly as an sm_90 cubin does.
  const std::string arch = absl::StrCat("--gpu-architecture=sm_", sm, sm == 90 ? "a" : "");
  const char* opts[] = {arch.c_str(), "-std=c++17", "--ptxas-options=-v", "-default-device"};
  rc = nvrtcCompileProgram(prog, 4, opts);
  NvrtcResult out;
  out.sm = sm;
  size_t log_size = 0;
  nvrtcGetProgramLogSize(prog, &log_size);
  out.log.resize(log_size);
  if (log_size > 0) nvrtcGetProgramLog(prog, out.log.data());
  while (!out.log.empty() && out.log.back() == '\0') out.log.pop_back();
  if (rc != NVRTC_SUCCESS) {
    nvrtcDestroyProgram(&prog);
    return absl::InvalidArgumentError(
        absl::StrCat("NVRTC failed for sm_", sm, ": ", nvrtcGetErrorString(rc), "\n", out.log));
  }
  size_t cubin_size = 0;
  if (nvrtcGetCUBINSize(prog, &cubin_size) == NVRTC_SUCCESS && cubin_size > 0) {
    out.cubin.resize(cubin_size);
    nvrtcGetCUBIN(prog, out.cubin.data());
  }
  nvrtcDestroyProgram(&prog);
  out.kernels = ParsePtxasReport(out.log);
  return out;
}

#else  // !PRISM_WITH_CUDA

bool NvrtcAvailable() { return false; }

absl::StatusOr<std::string> NvrtcVersion() {
  return absl::UnavailableError("prism was built without CUDA (PRISM_WITH_CUDA=OFF)");
}

absl::StatusOr<NvrtcResult> CompileWithNvrtc(absl::string_view, int) {
  return absl::UnavailableError("prism was built without CUDA (PRISM_WITH_CUDA=OFF): no NVRTC");
}

#endif

}  // namespace prism::codegen
