// Runs generated kernels on a GPU and compares them with the CPU block emulator
// (ctest label `gpu`). The driver is loaded with dlopen("libcuda.so.1") (never
// linked); without it, or without a device, or without NVRTC, the test skips.
#include <dlfcn.h>

#include <cstdint>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "block/fixtures/fixtures.h"
#include "split_fixtures.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "prism/block/block_instance.h"
#include "prism/block/emulator.h"
#include "prism/codegen/codegen.h"
#include "prism/codegen/nvrtc.h"
#include "prism/ir/interpreter.h"
#include "prism/ir/tensor.h"
#include "testing/status_matchers.h"

namespace prism::codegen {
namespace {

// The few driver-API entry points used, resolved at run time.
struct Driver {
  void* lib = nullptr;
  int (*cuInit)(unsigned) = nullptr;
  int (*cuDeviceGet)(int*, int) = nullptr;
  int (*cuDeviceGetAttribute)(int*, int, int) = nullptr;
  int (*cuDevicePrimaryCtxRetain)(void**, int) = nullptr;
  int (*cuCtxSetCurrent)(void*) = nullptr;
  int (*cuModuleLoadData)(void**, const void*) = nullptr;
  int (*cuModuleGetFunction)(void**, void*, const char*) = nullptr;
  int (*cuFuncSetAttribute)(void*, int, int) = nullptr;
  int (*cuMemAlloc)(uint64_t*, size_t) = nullptr;
  int (*cuMemFree)(uint64_t) = nullptr;
  int (*cuMemcpyHtoD)(uint64_t, const void*, size_t) = nullptr;
  int (*cuMemcpyDtoH)(void*, uint64_t, size_t) = nullptr;
  int (*cuMemsetD8)(uint64_t, unsigned char, size_t) = nullptr;
  int (*cuLaunchKernel)(void*, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                        void*, void**, void**) = nullptr;
  int (*cuCtxSynchronize)() = nullptr;

  template <typename T>
  bool Get(T& f, const char* name, const char* v2 = nullptr) {
    void* p = v2 ? dlsym(lib, v2) : nullptr;
    if (p == nullptr) p = dlsym(lib, name);
    f = reinterpret_cast<T>(p);
    return p != nullptr;
  }
  bool Load() {
    lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (lib == nullptr) return false;
    return Get(cuInit, "cuInit") && Get(cuDeviceGet, "cuDeviceGet") &&
           Get(cuDeviceGetAttribute, "cuDeviceGetAttribute") &&
           Get(cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain") &&
           Get(cuCtxSetCurrent, "cuCtxSetCurrent") && Get(cuModuleLoadData, "cuModuleLoadData") &&
           Get(cuModuleGetFunction, "cuModuleGetFunction") &&
           Get(cuFuncSetAttribute, "cuFuncSetAttribute") &&
           Get(cuMemAlloc, "cuMemAlloc", "cuMemAlloc_v2") &&
           Get(cuMemFree, "cuMemFree", "cuMemFree_v2") &&
           Get(cuMemcpyHtoD, "cuMemcpyHtoD", "cuMemcpyHtoD_v2") &&
           Get(cuMemcpyDtoH, "cuMemcpyDtoH", "cuMemcpyDtoH_v2") &&
           Get(cuMemsetD8, "cuMemsetD8", "cuMemsetD8_v2") &&
           Get(cuLaunchKernel, "cuLaunchKernel") && Get(cuCtxSynchronize, "cuCtxSynchronize");
  }
};

constexpr int kAttrCcMajor = 75,
              kAttrCcMinor = 76;            // CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_*
constexpr int kFuncAttrMaxDynamicSmem = 8;  // CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES

uint16_t ToF16Bits(double x) {
  const _Float16 h = static_cast<_Float16>(x);
  uint16_t b;
  std::memcpy(&b, &h, 2);
  return b;
}
double FromF16Bits(uint16_t b) {
  _Float16 h;
  std::memcpy(&h, &b, 2);
  return static_cast<double>(h);
}

struct GpuCase {
  const char* fixture;
  fixtures::Sizes sizes;
  Assignment assignment;
  int tiles_per_warp = 0;  // CodegenOptions::attention_tiles_per_warp
  bool pipeline = false;   // CodegenOptions::attention_pipeline
};

TEST(GpuRunTest, GeneratedKernelsMatchTheEmulator) {
  static Driver drv;
  static const bool loaded = drv.Load();
  if (!loaded) GTEST_SKIP() << "no libcuda.so.1";
  if (!NvrtcAvailable()) GTEST_SKIP() << "built without NVRTC";
  if (drv.cuInit(0) != 0) GTEST_SKIP() << "cuInit failed: no usable GPU";
  int dev = 0, major = 0, minor = 0;
  ASSERT_EQ(drv.cuDeviceGet(&dev, 0), 0);
  ASSERT_EQ(drv.cuDeviceGetAttribute(&major, kAttrCcMajor, dev), 0);
  ASSERT_EQ(drv.cuDeviceGetAttribute(&minor, kAttrCcMinor, dev), 0);
  if (major < 8) GTEST_SKIP() << "needs sm_80+";
  void* ctx = nullptr;
  ASSERT_EQ(drv.cuDevicePrimaryCtxRetain(&ctx, dev), 0);
  ASSERT_EQ(drv.cuCtxSetCurrent(ctx), 0);

  const GpuCase cases[] = {GpuCase{"rmsnorm_linear",
                                   {{"M", 2}, {"K", 1024}, {"N", 512}},
                                   {{"g", 16}, {"F", 8}, {"T", 128}, {"S", 3}}},
                           GpuCase{"rmsnorm_linear",
                                   {{"M", 16}, {"K", 1024}, {"N", 512}},
                                   {{"g", 8}, {"F", 4}, {"T", 256}, {"S", 2}}},
                           GpuCase{"rmsnorm_linear",
                                   {{"M", 24}, {"K", 512}, {"N", 256}},
                                   {{"g", 4}, {"F", 2}, {"T", 512}, {"S", 1}}},
                           GpuCase{"rmsnorm_linear_square",
                                   {{"M", 16}, {"K", 1024}, {"N", 512}},
                                   {{"g", 16}, {"F", 8}, {"T", 128}, {"S", 4}}},
                           GpuCase{"gated_mlp",
                                   {{"B", 8}, {"K", 1024}, {"N", 512}},
                                   {{"g", 16}, {"h", 1}, {"F", 8}, {"T", 256}, {"S", 3}}},
                           GpuCase{"gated_mlp",
                                   {{"B", 1}, {"K", 1024}, {"N", 512}},
                                   {{"g", 8}, {"h", 1}, {"F", 4}, {"T", 128}, {"S", 2}}},
                           // Split-KV attention (partial_kv + combine). 2 row tiles, 4 warps:
                           // 2 warps per tile along the 64-column chunk.
                           GpuCase{"gqa",
                                   {{"G", 2}, {"Lq", 32}, {"D", 64}, {"L", 512}},
                                   {{"gx", 2}, {"gy", 1}, {"gz", 4}, {"F", 2}, {"T", 128}, {"S", 2}}},
                           // Lq 24: m16 tiles padded; 2 heads per block, 8 warps, chunk 32.
                           GpuCase{"gqa",
                                   {{"G", 2}, {"Lq", 24}, {"D", 32}, {"L", 256}},
                                   {{"gx", 1}, {"gy", 1}, {"gz", 2}, {"F", 4}, {"T", 256}, {"S", 3}}},
                           // WORKLOADS.md head size, 2 tiles per warp, one stage.
                           GpuCase{"gqa",
                                   {{"G", 2}, {"Lq", 128}, {"D", 64}, {"L", 1024}},
                                   {{"gx", 2}, {"gy", 2}, {"gz", 4}, {"F", 4}, {"T", 64}, {"S", 1}}},
                           GpuCase{"qknorm_gqa",
                                   {{"G", 4}, {"Lq", 64}, {"D", 64}, {"L", 256}},
                                   {{"gx", 2}, {"gy", 2}, {"gz", 2}, {"F", 2}, {"T", 64}, {"S", 1}}},
                           GpuCase{"qknorm_gqa",
                                   {{"G", 2}, {"Lq", 64}, {"D", 64}, {"L", 1024}},
                                   {{"gx", 2}, {"gy", 1}, {"gz", 8}, {"F", 2}, {"T", 256}, {"S", 2}}},
                           // Two row tiles per warp sharing K/V fragments, 2 warps per pair.
                           GpuCase{"gqa",
                                   {{"G", 2}, {"Lq", 64}, {"D", 64}, {"L", 1024}},
                                   {{"gx", 2}, {"gy", 1}, {"gz", 4}, {"F", 2}, {"T", 128}, {"S", 3}},
                                   2},
                           GpuCase{"qknorm_gqa",
                                   {{"G", 4}, {"Lq", 32}, {"D", 64}, {"L", 512}},
                                   {{"gx", 2}, {"gy", 1}, {"gz", 2}, {"F", 4}, {"T", 64}, {"S", 2}},
                                   2},
                           // Software-pipelined loop: 3 and 4 stages, one chunk (F = 1), two
                           // tiles per warp, rms(V) double-buffered.
                           GpuCase{"gqa",
                                   {{"G", 2}, {"Lq", 64}, {"D", 64}, {"L", 1024}},
                                   {{"gx", 2}, {"gy", 2}, {"gz", 2}, {"F", 8}, {"T", 64}, {"S", 3}},
                                   0, true},
                           GpuCase{"gqa",
                                   {{"G", 2}, {"Lq", 64}, {"D", 64}, {"L", 512}},
                                   {{"gx", 2}, {"gy", 1}, {"gz", 8}, {"F", 1}, {"T", 128}, {"S", 4}},
                                   2, true},
                           GpuCase{"qknorm_gqa",
                                   {{"G", 2}, {"Lq", 64}, {"D", 64}, {"L", 1024}},
                                   {{"gx", 2}, {"gy", 2}, {"gz", 2}, {"F", 4}, {"T", 128}, {"S", 4}},
                                   0, true},
                           GpuCase{"qknorm_gqa",
                                   {{"G", 4}, {"Lq", 32}, {"D", 64}, {"L", 512}},
                                   {{"gx", 2}, {"gy", 1}, {"gz", 2}, {"F", 4}, {"T", 64}, {"S", 3}},
                                   2, true},
                           // lora: X·W and X·A in the loop, (X·A)·B after it (B invariant).
                           GpuCase{"lora",
                                   {{"B", 8}, {"K", 1024}, {"N", 512}, {"R", 16}},
                                   {{"g", 8}, {"F", 4}, {"T", 256}, {"S", 3}}},
                           GpuCase{"lora",
                                   {{"B", 1}, {"K", 1024}, {"N", 512}, {"R", 16}},
                                   {{"g", 16}, {"F", 8}, {"T", 64}, {"S", 1}}},
                           GpuCase{"lora",
                                   {{"B", 2}, {"K", 512}, {"N", 256}, {"R", 16}},
                                   {{"g", 2}, {"F", 2}, {"T", 128}, {"S", 2}}},
                           // ntrans: rms passes, inputs re-read (g=1) or cached in registers.
                           GpuCase{"ntrans", {{"B", 8}, {"D", 4096}}, {{"g", 1}, {"T", 256}}},
                           GpuCase{"ntrans", {{"B", 8}, {"D", 4096}}, {{"g", 8}, {"T", 512}}},
                           GpuCase{"ntrans", {{"B", 4}, {"D", 1024}}, {{"g", 2}, {"T", 128}}},
                           // Split-K (split_fixtures.h): f32 partials of X·A, X·B per K chunk,
                           // then the combine kernel sums them and applies silu(·) ⊙ (·).
                           GpuCase{"gated_mlp_splitk",
                                   {{"B", 8}, {"K", 1024}, {"N", 512}},
                                   {{"g", 8}, {"s", 4}, {"F", 2}, {"T", 128}, {"S", 3}}},
                           GpuCase{"gated_mlp_splitk",
                                   {{"B", 1}, {"K", 1024}, {"N", 512}},
                                   {{"g", 16}, {"s", 8}, {"F", 1}, {"T", 64}, {"S", 1}}},
                           GpuCase{"gated_mlp_splitk",
                                   {{"B", 2}, {"K", 2048}, {"N", 256}},
                                   {{"g", 4}, {"s", 16}, {"F", 2}, {"T", 256}, {"S", 2}}},
                           // lora split: (X·A)·B per K chunk in the loop, B invariant.
                           GpuCase{"lora_splitk",
                                   {{"B", 8}, {"K", 1024}, {"N", 512}, {"R", 16}},
                                   {{"g", 8}, {"s", 4}, {"F", 2}, {"T", 128}, {"S", 3}}},
                           GpuCase{"lora_splitk",
                                   {{"B", 1}, {"K", 1024}, {"N", 512}, {"R", 16}},
                                   {{"g", 16}, {"s", 8}, {"F", 1}, {"T", 64}, {"S", 1}}},
                           GpuCase{"lora_splitk",
                                   {{"B", 2}, {"K", 2048}, {"N", 256}, {"R", 16}},
                                   {{"g", 2}, {"s", 16}, {"F", 2}, {"T", 256}, {"S", 2}}}};
  for (const GpuCase& c : cases) {
    SCOPED_TRACE(c.fixture);
    ASSERT_OK_AND_ASSIGN(fixtures::Fixture f,
                         absl::EndsWith(c.fixture, "_splitk")
                             ? codegen_test::MakeSplitFixture(c.fixture, c.sizes)
                             : fixtures::MakeFixture(c.fixture, c.sizes));
    ASSERT_OK_AND_ASSIGN(BlockProgram p, Instantiate(f.graph, c.assignment));
    CodegenOptions options;
    options.attention_tiles_per_warp = c.tiles_per_warp;
    options.attention_pipeline = c.pipeline;
    ASSERT_OK_AND_ASSIGN(GeneratedCode code, GenerateCuda(p, options));
    ASSERT_OK_AND_ASSIGN(NvrtcResult r, CompileWithNvrtc(code.source, major * 10 + minor));
    void* module = nullptr;
    ASSERT_EQ(drv.cuModuleLoadData(&module, r.cubin.data()), 0);

    const std::vector<Tensor> inputs = RandomInputs(f.program, /*seed=*/7);
    ASSERT_OK_AND_ASSIGN(std::vector<Tensor> expected, Emulate(p, inputs));
    // Device buffers for every kernel tensor (f16 or f32 intermediates); outputs and
    // intermediates poisoned (0xFF bytes = NaN in f16 and f32).
    std::vector<uint64_t> buf(p.tensors.size(), 0);
    for (size_t t = 0; t < p.tensors.size(); ++t) {
      int64_t n = p.tensors[t].dtype == DType::kF32 ? 4 : 2;
      for (int64_t d : p.tensors[t].shape) n *= d;
      ASSERT_EQ(drv.cuMemAlloc(&buf[t], n), 0);
      ASSERT_EQ(drv.cuMemsetD8(buf[t], 0xFF, n), 0);
    }
    for (size_t i = 0; i < p.inputs.size(); ++i) {
      std::vector<uint16_t> h;
      for (double v : inputs[i].data) h.push_back(ToF16Bits(v));
      ASSERT_EQ(drv.cuMemcpyHtoD(buf[p.inputs[i]], h.data(), h.size() * 2), 0);
    }
    for (const LaunchConfig& l : code.launches) {
      void* fn = nullptr;
      ASSERT_EQ(drv.cuModuleGetFunction(&fn, module, l.function.c_str()), 0);
      ASSERT_EQ(drv.cuFuncSetAttribute(fn, kFuncAttrMaxDynamicSmem,
                                       static_cast<int>(l.dynamic_smem_bytes)),
                0);
      std::vector<uint64_t> args;
      for (int t : l.args) args.push_back(buf[t]);
      std::vector<void*> argp;
      for (uint64_t& a : args) argp.push_back(&a);
      ASSERT_EQ(drv.cuLaunchKernel(fn, l.grid[0], l.grid[1], l.grid[2], l.threads, 1, 1,
                                   l.dynamic_smem_bytes, nullptr, argp.data(), nullptr),
                0);
    }
    ASSERT_EQ(drv.cuCtxSynchronize(), 0);
    for (size_t o = 0; o < p.outputs.size(); ++o) {
      Tensor got = expected[o];
      std::vector<uint16_t> h(got.data.size());
      ASSERT_EQ(drv.cuMemcpyDtoH(h.data(), buf[p.outputs[o]], h.size() * 2), 0);
      for (size_t i = 0; i < h.size(); ++i) got.data[i] = FromF16Bits(h[i]);
      // Same f32 arithmetic in another summation order, then one f16 rounding:
      // within a few f16 ulps of the emulator; NaN (an unwritten element)
      // fails.
      const double err = RelativeError(got, expected[o]);
      EXPECT_LT(err, 2e-3) << c.fixture << " output " << o;
      std::cout << c.fixture << ": relative error vs emulator " << err << "\n";
    }
    for (uint64_t b : buf) drv.cuMemFree(b);
  }
}

}  // namespace
}  // namespace prism::codegen
