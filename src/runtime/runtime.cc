// The GPU runtime: child processes, the dlopen'ed driver API, measurement, compile cache.
#include "prism/runtime/runtime.h"

#include <dlfcn.h>
#include <poll.h>
#include <signal.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <sstream>
#include <thread>

#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"
#include "prism/base/float16.h"
#include "prism/base/hash.h"
#include "prism/base/status.h"
#include "prism/codegen/nvrtc.h"

namespace prism::runtime {
namespace {

// ---- child processes ------------------------------------------------------------------------

bool WriteAll(int fd, const char* p, size_t n) {
  while (n > 0) {
    ssize_t w = write(fd, p, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    p += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

}  // namespace

const char* ChildResultKindName(ChildResult::Kind kind) {
  switch (kind) {
    case ChildResult::Kind::kOk:
      return "ok";
    case ChildResult::Kind::kFailed:
      return "failed";
    case ChildResult::Kind::kCrashed:
      return "crashed";
    case ChildResult::Kind::kTimedOut:
      return "timed out";
  }
  return "?";
}

namespace {

// Sequence framing (child → parent): type 'O' (ok), 'E' (error) or 'S' (stopped), the item
// index (4 bytes), then for 'O'/'E' the status code (1 byte), the payload length (4 bytes) and
// the payload / message.
bool WriteFrame(int fd, char type, int index, absl::StatusCode code, absl::string_view payload) {
  std::string f(1, type);
  const uint32_t i = static_cast<uint32_t>(index), len = static_cast<uint32_t>(payload.size());
  f.append(reinterpret_cast<const char*>(&i), 4);
  if (type != 'S') {
    f.push_back(static_cast<char>(static_cast<int>(code)));
    f.append(reinterpret_cast<const char*>(&len), 4);
    f.append(payload.data(), payload.size());
  }
  return WriteAll(fd, f.data(), f.size());
}

std::string ExitMessage(int wstatus) {
  if (WIFSIGNALED(wstatus)) {
    const int sig = WTERMSIG(wstatus);
    return absl::StrCat("killed by signal ", sig, " (", strsignal(sig), ")");
  }
  return absl::StrCat("exited with status ", WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : -1,
                      " without a result");
}

}  // namespace

absl::StatusOr<std::vector<std::optional<ChildResult>>> RunSequenceInChild(
    int n, const std::function<absl::StatusOr<std::string>(int)>& fn,
    absl::Duration per_item_timeout, const std::function<bool(int)>& should_start) {
  std::vector<std::optional<ChildResult>> out(std::max(0, n));
  const int64_t timeout_ms = std::clamp<int64_t>(absl::ToInt64Milliseconds(per_item_timeout), 0,
                                                 int64_t{24} * 3600 * 1000);
  int next = 0;
  while (next < n) {
    int fds[2];
    if (pipe(fds) != 0) return absl::InternalError(absl::StrCat("pipe failed: ", strerror(errno)));
    const int first = next;
    const pid_t pid = fork();
    if (pid < 0) {
      close(fds[0]);
      close(fds[1]);
      return absl::InternalError(absl::StrCat("fork failed: ", strerror(errno)));
    }
    if (pid == 0) {
      close(fds[0]);
      bool ok = true;
      for (int i = first; i < n && ok; ++i) {
        if (should_start && !should_start(i)) {
          ok = WriteFrame(fds[1], 'S', i, absl::StatusCode::kOk, "");
          break;
        }
        absl::StatusOr<std::string> r = fn(i);
        if (r.ok()) {
          ok = WriteFrame(fds[1], 'O', i, absl::StatusCode::kOk, *r);
        } else {
          WriteFrame(fds[1], 'E', i, r.status().code(), r.status().message());
          break;  // a fresh child for the next item
        }
      }
      close(fds[1]);
      _exit(ok ? 0 : 3);
    }
    close(fds[1]);
    std::string data;
    size_t pos = 0;
    bool stopped = false, timed_out = false, ended_on_error = false;
    auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    char buf[1 << 16];
    auto parse = [&]() {  // consumes the complete frames in data[pos..)
      while (true) {
        if (data.size() - pos < 5) return;
        const char type = data[pos];
        uint32_t idx = 0;
        std::memcpy(&idx, &data[pos + 1], 4);
        if (type == 'S') {
          stopped = true;
          pos += 5;
          continue;
        }
        if (data.size() - pos < 10) return;
        uint32_t len = 0;
        std::memcpy(&len, &data[pos + 6], 4);
        if (data.size() - pos < 10 + static_cast<size_t>(len)) return;
        ChildResult r;
        if (type == 'O') {
          r.kind = ChildResult::Kind::kOk;
          r.payload = data.substr(pos + 10, len);
        } else {
          r.kind = ChildResult::Kind::kFailed;
          r.code = static_cast<absl::StatusCode>(static_cast<unsigned char>(data[pos + 5]));
          r.message = data.substr(pos + 10, len);
        }
        ended_on_error = type != 'O';
        if (static_cast<int>(idx) < n) {
          out[idx] = std::move(r);
          next = static_cast<int>(idx) + 1;
        }
        pos += 10 + len;
        deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
      }
    };
    while (true) {
      const auto now = std::chrono::steady_clock::now();
      if (now >= deadline) {
        timed_out = true;
        break;
      }
      const int ms = static_cast<int>(
                         std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now)
                             .count()) +
                     1;
      pollfd p{fds[0], POLLIN, 0};
      const int pr = poll(&p, 1, ms);
      if (pr < 0 && errno == EINTR) continue;
      if (pr == 0) continue;
      const ssize_t got = read(fds[0], buf, sizeof buf);
      if (got < 0 && errno == EINTR) continue;
      if (got <= 0) break;
      data.append(buf, static_cast<size_t>(got));
      parse();
    }
    close(fds[0]);
    if (timed_out) kill(pid, SIGKILL);
    int wstatus = 0;
    while (waitpid(pid, &wstatus, 0) < 0 && errno == EINTR) {
    }
    if (stopped) break;
    if (next >= n) break;
    if (timed_out) {
      ChildResult r;
      r.kind = ChildResult::Kind::kTimedOut;
      r.message = absl::StrCat("timed out after ", absl::FormatDuration(per_item_timeout));
      out[next++] = std::move(r);
    } else if (!ended_on_error || next == first) {
      // The child ended without reporting item `next` (a fault, an abort, an exit).
      ChildResult r;
      r.kind = ChildResult::Kind::kCrashed;
      r.message = ExitMessage(wstatus);
      out[next++] = std::move(r);
    }
  }
  return out;
}

absl::StatusOr<ChildResult> RunInChild(const std::function<absl::StatusOr<std::string>()>& fn,
                                       absl::Duration timeout) {
  PRISM_ASSIGN_OR_RETURN(std::vector<std::optional<ChildResult>> r,
                         RunSequenceInChild(1, [&](int) { return fn(); }, timeout));
  return *std::move(r[0]);  // no should_start: the one item always has a result
}

namespace {

// ---- the driver API -------------------------------------------------------------------------

using CUdeviceptr = uint64_t;

struct Driver {
  void* lib = nullptr;
  int (*cuInit)(unsigned) = nullptr;
  int (*cuDriverGetVersion)(int*) = nullptr;
  int (*cuDeviceGetCount)(int*) = nullptr;
  int (*cuDeviceGet)(int*, int) = nullptr;
  int (*cuDeviceGetName)(char*, int, int) = nullptr;
  int (*cuDeviceTotalMem)(size_t*, int) = nullptr;
  int (*cuDeviceGetAttribute)(int*, int, int) = nullptr;
  int (*cuDevicePrimaryCtxRetain)(void**, int) = nullptr;
  int (*cuCtxSetCurrent)(void*) = nullptr;
  int (*cuModuleLoadData)(void**, const void*) = nullptr;
  int (*cuModuleGetFunction)(void**, void*, const char*) = nullptr;
  int (*cuFuncSetAttribute)(void*, int, int) = nullptr;
  int (*cuMemAlloc)(CUdeviceptr*, size_t) = nullptr;
  int (*cuMemFree)(CUdeviceptr) = nullptr;
  int (*cuMemcpyHtoD)(CUdeviceptr, const void*, size_t) = nullptr;
  int (*cuMemcpyDtoH)(void*, CUdeviceptr, size_t) = nullptr;
  int (*cuMemsetD8)(CUdeviceptr, unsigned char, size_t) = nullptr;
  int (*cuLaunchKernel)(void*, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                        void*, void**, void**) = nullptr;
  // Optional (CUDA 12+): launches with attributes (clusters, programmatic dependent launch).
  int (*cuLaunchKernelEx)(const void*, void*, void**, void**) = nullptr;
  int (*cuCtxSynchronize)() = nullptr;
  int (*cuStreamCreate)(void**, unsigned) = nullptr;
  int (*cuStreamBeginCapture)(void*, int) = nullptr;
  int (*cuStreamEndCapture)(void*, void**) = nullptr;
  int (*cuGraphInstantiateWithFlags)(void**, void*, unsigned long long) = nullptr;
  int (*cuGraphLaunch)(void*, void*) = nullptr;
  int (*cuEventCreate)(void**, unsigned) = nullptr;
  int (*cuEventRecord)(void*, void*) = nullptr;
  int (*cuEventSynchronize)(void*) = nullptr;
  int (*cuEventElapsedTime)(float*, void*, void*) = nullptr;
  int (*cuStreamSynchronize)(void*) = nullptr;
  // Releases (MeasureAllInChild frees each job's resources).
  int (*cuModuleUnload)(void*) = nullptr;
  int (*cuGraphDestroy)(void*) = nullptr;
  int (*cuGraphExecDestroy)(void*) = nullptr;
  int (*cuStreamDestroy)(void*) = nullptr;
  int (*cuEventDestroy)(void*) = nullptr;

  template <typename T>
  bool Get(T& f, const char* name, const char* v2 = nullptr) {
    void* p = v2 ? dlsym(lib, v2) : nullptr;
    if (p == nullptr) p = dlsym(lib, name);
    f = reinterpret_cast<T>(p);
    return p != nullptr;
  }
};

constexpr int kAttrSms = 16, kAttrCcMajor = 75, kAttrCcMinor = 76, kAttrL2 = 38;
constexpr int kFuncAttrMaxDynamicSmem = 8;
constexpr int kFuncAttrNonPortableClusterSizeAllowed = 14;
constexpr int kLaunchAttrClusterDimension = 4;
constexpr int kLaunchAttrProgrammaticStreamSerialization = 6;

// The driver's CUlaunchAttribute and CUlaunchConfig (cuda.h, CUDA 12+), mirrored.
struct LaunchAttribute {
  int id = 0;
  char pad[4] = {};
  union {
    unsigned cluster_dim[3];
    int programmatic;
    char bytes[64];
  } value = {};
};
struct LaunchConfigEx {
  unsigned grid[3] = {1, 1, 1};
  unsigned block[3] = {1, 1, 1};
  unsigned shared_mem_bytes = 0;
  void* stream = nullptr;
  LaunchAttribute* attrs = nullptr;
  unsigned num_attrs = 0;
};
static_assert(sizeof(LaunchAttribute) == 72, "CUlaunchAttribute is 72 bytes");
constexpr int kCaptureModeRelaxed = 2;

// Loads and initializes the driver in THIS process (call only in a child).
absl::StatusOr<Driver> LoadDriver() {
  Driver d;
  d.lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (d.lib == nullptr) {
    const char* e = dlerror();
    return absl::UnavailableError(
        absl::StrCat("no CUDA driver: dlopen(\"libcuda.so.1\") failed (", e ? e : "unknown", ")"));
  }
  const bool ok =
      d.Get(d.cuInit, "cuInit") && d.Get(d.cuDriverGetVersion, "cuDriverGetVersion") &&
      d.Get(d.cuDeviceGetCount, "cuDeviceGetCount") && d.Get(d.cuDeviceGet, "cuDeviceGet") &&
      d.Get(d.cuDeviceGetName, "cuDeviceGetName") &&
      d.Get(d.cuDeviceTotalMem, "cuDeviceTotalMem", "cuDeviceTotalMem_v2") &&
      d.Get(d.cuDeviceGetAttribute, "cuDeviceGetAttribute") &&
      d.Get(d.cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain") &&
      d.Get(d.cuCtxSetCurrent, "cuCtxSetCurrent") &&
      d.Get(d.cuModuleLoadData, "cuModuleLoadData") &&
      d.Get(d.cuModuleGetFunction, "cuModuleGetFunction") &&
      d.Get(d.cuFuncSetAttribute, "cuFuncSetAttribute") &&
      d.Get(d.cuMemAlloc, "cuMemAlloc", "cuMemAlloc_v2") &&
      d.Get(d.cuMemFree, "cuMemFree", "cuMemFree_v2") &&
      d.Get(d.cuMemcpyHtoD, "cuMemcpyHtoD", "cuMemcpyHtoD_v2") &&
      d.Get(d.cuMemcpyDtoH, "cuMemcpyDtoH", "cuMemcpyDtoH_v2") &&
      d.Get(d.cuMemsetD8, "cuMemsetD8", "cuMemsetD8_v2") &&
      d.Get(d.cuLaunchKernel, "cuLaunchKernel") && d.Get(d.cuCtxSynchronize, "cuCtxSynchronize") &&
      d.Get(d.cuStreamCreate, "cuStreamCreate") &&
      d.Get(d.cuStreamBeginCapture, "cuStreamBeginCapture", "cuStreamBeginCapture_v2") &&
      d.Get(d.cuStreamEndCapture, "cuStreamEndCapture") &&
      d.Get(d.cuGraphInstantiateWithFlags, "cuGraphInstantiateWithFlags") &&
      d.Get(d.cuGraphLaunch, "cuGraphLaunch") && d.Get(d.cuEventCreate, "cuEventCreate") &&
      d.Get(d.cuEventRecord, "cuEventRecord") &&
      d.Get(d.cuEventSynchronize, "cuEventSynchronize") &&
      d.Get(d.cuEventElapsedTime, "cuEventElapsedTime", "cuEventElapsedTime_v2") &&
      d.Get(d.cuStreamSynchronize, "cuStreamSynchronize") &&
      (d.Get(d.cuLaunchKernelEx, "cuLaunchKernelEx"), true) &&
      d.Get(d.cuModuleUnload, "cuModuleUnload") && d.Get(d.cuGraphDestroy, "cuGraphDestroy") &&
      d.Get(d.cuGraphExecDestroy, "cuGraphExecDestroy") &&
      d.Get(d.cuStreamDestroy, "cuStreamDestroy", "cuStreamDestroy_v2") &&
      d.Get(d.cuEventDestroy, "cuEventDestroy", "cuEventDestroy_v2");
  if (!ok) {
    return absl::UnavailableError("no CUDA driver: libcuda.so.1 lacks a driver API entry point");
  }
  if (const int e = d.cuInit(0); e != 0) {
    return absl::UnavailableError(absl::StrCat("no usable GPU: cuInit failed with CUDA error ", e));
  }
  return d;
}

#define PRISM_CU(call)                                                                           \
  do {                                                                                           \
    if (const int _e = (call); _e != 0) {                                                        \
      return absl::FailedPreconditionError(absl::StrCat(#call, " failed with CUDA error ", _e)); \
    }                                                                                            \
  } while (0)

absl::Status CheckOrdinal(Driver& d, int ordinal) {
  int count = 0;
  PRISM_CU(d.cuDeviceGetCount(&count));
  if (ordinal < 0 || ordinal >= count) {
    return absl::UnavailableError(
        absl::StrCat("no GPU with ordinal ", ordinal, " (the driver reports ", count, ")"));
  }
  return absl::OkStatus();
}

absl::StatusOr<DeviceInfo> QueryInProcess(Driver& d, int ordinal) {
  PRISM_RETURN_IF_ERROR(CheckOrdinal(d, ordinal));
  int dev = 0;
  PRISM_CU(d.cuDeviceGet(&dev, ordinal));
  DeviceInfo info;
  info.ordinal = ordinal;
  char name[256] = {};
  PRISM_CU(d.cuDeviceGetName(name, sizeof name - 1, dev));
  info.name = name;
  PRISM_CU(d.cuDeviceGetAttribute(&info.sms, kAttrSms, dev));
  PRISM_CU(d.cuDeviceGetAttribute(&info.cc_major, kAttrCcMajor, dev));
  PRISM_CU(d.cuDeviceGetAttribute(&info.cc_minor, kAttrCcMinor, dev));
  int l2 = 0;
  PRISM_CU(d.cuDeviceGetAttribute(&l2, kAttrL2, dev));
  info.l2_bytes = l2;
  size_t mem = 0;
  PRISM_CU(d.cuDeviceTotalMem(&mem, dev));
  info.total_memory_bytes = static_cast<int64_t>(mem);
  PRISM_CU(d.cuDriverGetVersion(&info.driver_version));
  return info;
}

// The child's status → the parent's. Crashes and timeouts become Internal with `what`.
absl::StatusOr<std::string> FromChild(const ChildResult& r, absl::string_view what) {
  switch (r.kind) {
    case ChildResult::Kind::kOk:
      return r.payload;
    case ChildResult::Kind::kFailed:
      return absl::Status(r.code, r.message);
    case ChildResult::Kind::kCrashed:
      return absl::InternalError(absl::StrCat(what, " crashed: ", r.message));
    case ChildResult::Kind::kTimedOut:
      return absl::InternalError(absl::StrCat(what, " ", r.message));
  }
  return absl::InternalError("unreachable");
}

int64_t ElementBytes(DType t) { return t == DType::kF32 ? 4 : 2; }
int64_t TensorBytes(const ConcreteTensor& t) {
  int64_t n = ElementBytes(t.dtype);
  for (int64_t d : t.shape) n *= d;
  return n;
}

std::string ToBytes(const Tensor& t) {
  std::string out;
  if (t.dtype == DType::kF32) {
    out.resize(t.data.size() * 4);
    for (size_t i = 0; i < t.data.size(); ++i) {
      const float f = static_cast<float>(t.data[i]);
      std::memcpy(&out[i * 4], &f, 4);
    }
  } else {
    out.resize(t.data.size() * 2);
    for (size_t i = 0; i < t.data.size(); ++i) {
      const uint16_t b = t.dtype == DType::kBF16 ? BF16Bits(t.data[i]) : F16Bits(t.data[i]);
      std::memcpy(&out[i * 2], &b, 2);
    }
  }
  return out;
}

void FromBytes(const std::string& bytes, Tensor& t) {
  for (size_t i = 0; i < t.data.size(); ++i) {
    if (t.dtype == DType::kF32) {
      float f;
      std::memcpy(&f, &bytes[i * 4], 4);
      t.data[i] = f;
    } else {
      uint16_t b;
      std::memcpy(&b, &bytes[i * 2], 2);
      t.data[i] = t.dtype == DType::kBF16 ? BF16Value(b) : F16Value(b);
    }
  }
}

// Loads the driver and makes device `ordinal`'s primary context current (in a child).
absl::StatusOr<Driver> OpenDevice(int ordinal) {
  PRISM_ASSIGN_OR_RETURN(Driver d, LoadDriver());
  PRISM_RETURN_IF_ERROR(CheckOrdinal(d, ordinal));
  int dev = 0;
  PRISM_CU(d.cuDeviceGet(&dev, ordinal));
  void* ctx = nullptr;
  PRISM_CU(d.cuDevicePrimaryCtxRetain(&ctx, dev));
  PRISM_CU(d.cuCtxSetCurrent(ctx));
  return d;
}

// The program inputs of a sequence of measurements: their bytes (converted once) and, per
// (input, input set), a device buffer uploaded once and kept for every later program (kernels
// never write their inputs).
struct InputCache {
  std::vector<std::string> host;  // ToBytes of each input
  std::map<std::pair<size_t, int64_t>, CUdeviceptr> device;
};

// Measures one program in the current context; with `release`, frees everything it created
// except the cached inputs (on success; after an error the caller's process exits).
absl::StatusOr<Measurement> MeasureWith(Driver& d, const std::string& cubin,
                                        const std::vector<codegen::LaunchConfig>& launches,
                                        const BlockProgram& program,
                                        const std::vector<Tensor>& inputs,
                                        const std::vector<Tensor>& reference,
                                        const MeasureOptions& options, bool release,
                                        InputCache& cache, double best_us = 0) {
  void* module = nullptr;
  PRISM_CU(d.cuModuleLoadData(&module, cubin.data()));
  std::vector<void*> fns;
  for (const codegen::LaunchConfig& l : launches) {
    void* fn = nullptr;
    PRISM_CU(d.cuModuleGetFunction(&fn, module, l.function.c_str()));
    PRISM_CU(
        d.cuFuncSetAttribute(fn, kFuncAttrMaxDynamicSmem, static_cast<int>(l.dynamic_smem_bytes)));
    if (l.cluster[0] * l.cluster[1] * l.cluster[2] > 8) {
      PRISM_CU(d.cuFuncSetAttribute(fn, kFuncAttrNonPortableClusterSizeAllowed, 1));
    }
    if ((l.cluster != std::array<int64_t, 3>{1, 1, 1} || l.programmatic) &&
        d.cuLaunchKernelEx == nullptr) {
      return absl::FailedPreconditionError(
          absl::StrCat("measure: kernel ", l.function,
                       " needs launch attributes (cluster or programmatic dependent launch) and "
                       "the driver has no cuLaunchKernelEx (CUDA 12 or newer)"));
    }
    fns.push_back(fn);
  }
  if (inputs.size() != program.inputs.size() || reference.empty() || program.outputs.empty()) {
    return absl::InvalidArgumentError("measure: inputs or reference do not match the program");
  }
  int64_t set_bytes = 0;
  for (const ConcreteTensor& t : program.tensors) set_bytes += TensorBytes(t);
  const int64_t sets = std::max<int64_t>(
      2, std::min<int64_t>(64, (2 * options.l2_bytes) / std::max<int64_t>(1, set_bytes) + 1));
  std::vector<std::vector<CUdeviceptr>> buf(sets, std::vector<CUdeviceptr>(program.tensors.size()));
  if (cache.host.empty()) {
    for (const Tensor& t : inputs) cache.host.push_back(ToBytes(t));
  }
  std::vector<bool> is_input(program.tensors.size(), false);
  for (int t : program.inputs) is_input[t] = true;
  for (int64_t s = 0; s < sets; ++s) {
    for (size_t t = 0; t < program.tensors.size(); ++t) {
      if (is_input[t]) continue;
      const int64_t n = TensorBytes(program.tensors[t]);
      PRISM_CU(d.cuMemAlloc(&buf[s][t], static_cast<size_t>(std::max<int64_t>(n, 16))));
      PRISM_CU(d.cuMemsetD8(buf[s][t], 0xFF, static_cast<size_t>(n)));  // NaN
    }
    for (size_t i = 0; i < program.inputs.size(); ++i) {
      const std::string& bytes = cache.host[i];
      if (static_cast<int64_t>(bytes.size()) != TensorBytes(program.tensors[program.inputs[i]])) {
        return absl::InvalidArgumentError("measure: an input's size differs from the program's");
      }
      auto [it, added] = cache.device.emplace(std::make_pair(i, s), CUdeviceptr{0});
      if (added) {
        PRISM_CU(d.cuMemAlloc(&it->second, std::max<size_t>(bytes.size(), 16)));
        PRISM_CU(d.cuMemcpyHtoD(it->second, bytes.data(), bytes.size()));
      }
      buf[s][program.inputs[i]] = it->second;
    }
  }
  void* stream = nullptr;
  PRISM_CU(d.cuStreamCreate(&stream, 0));
  auto launch_all = [&](int64_t s) -> absl::Status {
    for (size_t k = 0; k < launches.size(); ++k) {
      const codegen::LaunchConfig& l = launches[k];
      std::vector<CUdeviceptr> args;
      for (int t : l.args) args.push_back(buf[s][t]);
      std::vector<void*> argp;
      for (CUdeviceptr& a : args) argp.push_back(&a);
      if (l.cluster != std::array<int64_t, 3>{1, 1, 1} || l.programmatic) {
        LaunchAttribute attrs[2];
        LaunchConfigEx cfg;
        for (int a = 0; a < 3; ++a) cfg.grid[a] = static_cast<unsigned>(l.grid[a]);
        cfg.block[0] = static_cast<unsigned>(l.threads);
        cfg.shared_mem_bytes = static_cast<unsigned>(l.dynamic_smem_bytes);
        cfg.stream = stream;
        cfg.attrs = attrs;
        if (l.cluster != std::array<int64_t, 3>{1, 1, 1}) {
          LaunchAttribute& at = attrs[cfg.num_attrs++];
          at.id = kLaunchAttrClusterDimension;
          for (int a = 0; a < 3; ++a) at.value.cluster_dim[a] = static_cast<unsigned>(l.cluster[a]);
        }
        if (l.programmatic) {
          LaunchAttribute& at = attrs[cfg.num_attrs++];
          at.id = kLaunchAttrProgrammaticStreamSerialization;
          at.value.programmatic = 1;
        }
        PRISM_CU(d.cuLaunchKernelEx(&cfg, fns[k], argp.data(), nullptr));
      } else {
        PRISM_CU(d.cuLaunchKernel(
            fns[k], static_cast<unsigned>(l.grid[0]), static_cast<unsigned>(l.grid[1]),
            static_cast<unsigned>(l.grid[2]), static_cast<unsigned>(l.threads), 1, 1,
            static_cast<unsigned>(l.dynamic_smem_bytes), stream, argp.data(), nullptr));
      }
    }
    return absl::OkStatus();
  };
  // Correctness on set 0.
  PRISM_RETURN_IF_ERROR(launch_all(0));
  PRISM_CU(d.cuStreamSynchronize(stream));
  Measurement m;
  if (reference.size() < program.outputs.size()) {
    return absl::InvalidArgumentError("measure: fewer reference tensors than program outputs");
  }
  for (size_t o = 0; o < program.outputs.size(); ++o) {  // the worst output counts
    const int out = program.outputs[o];
    Tensor got = reference[o];
    std::string bytes(static_cast<size_t>(TensorBytes(program.tensors[out])), '\0');
    PRISM_CU(d.cuMemcpyDtoH(bytes.data(), buf[0][out], bytes.size()));
    if (got.data.size() * static_cast<size_t>(ElementBytes(got.dtype)) != bytes.size()) {
      return absl::InvalidArgumentError(
          absl::StrCat("measure: the reference's shape differs from output ", o));
    }
    FromBytes(bytes, got);
    const double rel = RelativeError(got, reference[o]);
    const double ratio = ReferenceToleranceRatio(got, reference[o], DefaultTolerance(got.dtype));
    // NaN (an unwritten element) must not compare as small.
    m.relative_error = std::isnan(rel) ? std::numeric_limits<double>::infinity()
                                       : std::max(m.relative_error, rel);
    m.tolerance_ratio = std::isnan(ratio) ? std::numeric_limits<double>::infinity()
                                          : std::max(m.tolerance_ratio, ratio);
  }
  m.matches = m.tolerance_ratio <= 1;
  // Timing: one graph with one call per input set.
  PRISM_CU(d.cuStreamBeginCapture(stream, kCaptureModeRelaxed));
  for (int64_t s = 0; s < sets; ++s) PRISM_RETURN_IF_ERROR(launch_all(s));
  void* graph = nullptr;
  PRISM_CU(d.cuStreamEndCapture(stream, &graph));
  void* exec = nullptr;
  PRISM_CU(d.cuGraphInstantiateWithFlags(&exec, graph, 0));
  void* e0 = nullptr;
  void* e1 = nullptr;
  PRISM_CU(d.cuEventCreate(&e0, 0));
  PRISM_CU(d.cuEventCreate(&e1, 0));
  for (int i = 0; i < options.warmup; ++i) PRISM_CU(d.cuGraphLaunch(exec, stream));
  PRISM_CU(d.cuStreamSynchronize(stream));
  std::vector<double> ts;
  auto median = [&ts] {
    std::vector<double> s = ts;
    std::sort(s.begin(), s.end());
    return s[s.size() / 2];
  };
  for (int i = 0; i < std::max(1, options.replays); ++i) {
    PRISM_CU(d.cuEventRecord(e0, stream));
    PRISM_CU(d.cuGraphLaunch(exec, stream));
    PRISM_CU(d.cuEventRecord(e1, stream));
    PRISM_CU(d.cuEventSynchronize(e1));
    float ms = 0;
    PRISM_CU(d.cuEventElapsedTime(&ms, e0, e1));
    ts.push_back(ms * 1000.0 / static_cast<double>(sets));
    if (static_cast<int>(ts.size()) == options.early_stop_replays &&
        options.early_stop_factor > 0 && best_us > 0 &&
        median() > options.early_stop_factor * best_us) {
      break;
    }
  }
  m.median_us = median();
  m.replays = static_cast<int>(ts.size());
  m.input_sets = static_cast<int>(sets);
  if (release) {
    PRISM_CU(d.cuEventDestroy(e0));
    PRISM_CU(d.cuEventDestroy(e1));
    PRISM_CU(d.cuGraphExecDestroy(exec));
    PRISM_CU(d.cuGraphDestroy(graph));
    PRISM_CU(d.cuStreamDestroy(stream));
    for (const std::vector<CUdeviceptr>& set : buf) {
      for (size_t t = 0; t < set.size(); ++t) {
        if (!is_input[t]) PRISM_CU(d.cuMemFree(set[t]));
      }
    }
    PRISM_CU(d.cuModuleUnload(module));
  }
  return m;
}

std::string MeasurementJson(const Measurement& m) {
  nlohmann::json j = {{"us", m.median_us},
                      {"sets", m.input_sets},
                      {"rel", std::isfinite(m.relative_error) ? m.relative_error : -1.0},
                      {"ratio", std::isfinite(m.tolerance_ratio) ? m.tolerance_ratio : -1.0},
                      {"matches", m.matches},
                      {"replays", m.replays}};
  return j.dump();
}

Measurement MeasurementFromJson(const std::string& payload) {
  const nlohmann::json j = nlohmann::json::parse(payload);
  Measurement m;
  m.median_us = j["us"];
  m.input_sets = j["sets"];
  const double rel = j["rel"], ratio = j["ratio"];
  m.relative_error = rel < 0 ? std::numeric_limits<double>::infinity() : rel;
  m.tolerance_ratio = ratio < 0 ? std::numeric_limits<double>::infinity() : ratio;
  m.matches = j["matches"];
  m.replays = j["replays"];
  return m;
}

// Measures the programs of one child's sequence: the driver, opened by the first, and the
// fastest matching program so far (MeasureOptions::early_stop_factor compares with it).
// Fork copies it as it is, so it lives in the parent empty.
struct SequenceMeasurer {
  int ordinal = 0;
  std::optional<Driver> driver;
  double best_us = 0;

  absl::StatusOr<Measurement> Measure(const std::string& cubin,
                                      const std::vector<codegen::LaunchConfig>& launches,
                                      const BlockProgram& program,
                                      const std::vector<Tensor>& inputs,
                                      const std::vector<Tensor>& reference,
                                      const MeasureOptions& options, InputCache& cache) {
    if (!driver) {
      PRISM_ASSIGN_OR_RETURN(Driver d, OpenDevice(ordinal));
      driver = d;
    }
    PRISM_ASSIGN_OR_RETURN(Measurement m,
                           MeasureWith(*driver, cubin, launches, program, inputs, reference,
                                       options, /*release=*/true, cache, best_us));
    if (m.matches && (best_us == 0 || m.median_us < best_us)) best_us = m.median_us;
    return m;
  }
};

}  // namespace

bool DriverLibraryPresent() {
  void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) return false;
  dlclose(lib);
  return true;
}

absl::StatusOr<DeviceInfo> QueryDevice(int ordinal, absl::Duration timeout) {
  PRISM_ASSIGN_OR_RETURN(ChildResult r, RunInChild(
                                            [ordinal]() -> absl::StatusOr<std::string> {
                                              PRISM_ASSIGN_OR_RETURN(Driver d, LoadDriver());
                                              PRISM_ASSIGN_OR_RETURN(DeviceInfo i,
                                                                     QueryInProcess(d, ordinal));
                                              nlohmann::json j = {{"name", i.name},
                                                                  {"sms", i.sms},
                                                                  {"cc_major", i.cc_major},
                                                                  {"cc_minor", i.cc_minor},
                                                                  {"driver", i.driver_version},
                                                                  {"mem", i.total_memory_bytes},
                                                                  {"l2", i.l2_bytes}};
                                              return j.dump();
                                            },
                                            timeout));
  PRISM_ASSIGN_OR_RETURN(std::string payload, FromChild(r, "the device query"));
  const nlohmann::json j = nlohmann::json::parse(payload);
  DeviceInfo i;
  i.ordinal = ordinal;
  i.name = j["name"];
  i.sms = j["sms"];
  i.cc_major = j["cc_major"];
  i.cc_minor = j["cc_minor"];
  i.driver_version = j["driver"];
  i.total_memory_bytes = j["mem"];
  i.l2_bytes = j["l2"];
  return i;
}

absl::StatusOr<std::vector<absl::StatusOr<Measurement>>> MeasureAllInChild(
    int ordinal, const std::vector<MeasureJob>& jobs, const std::vector<Tensor>& inputs,
    const std::vector<Tensor>& reference, const MeasureOptions& options, absl::Time deadline) {
  // Per child (fork copies them empty): the measurer (the driver, opened by the child's first
  // job) and per input list the inputs' device buffers. Their bytes are converted once, here,
  // before any fork.
  SequenceMeasurer measurer;
  measurer.ordinal = ordinal;
  std::map<const std::vector<Tensor>*, InputCache> caches;
  for (const MeasureJob& job : jobs) {
    const std::vector<Tensor>* in = job.inputs ? job.inputs : &inputs;
    auto [it, added] = caches.try_emplace(in);
    if (added) {
      for (const Tensor& t : *in) it->second.host.push_back(ToBytes(t));
    }
  }
  auto measure = [&](int i) -> absl::StatusOr<std::string> {
    const MeasureJob& job = jobs[static_cast<size_t>(i)];
    const std::vector<Tensor>& in = job.inputs ? *job.inputs : inputs;
    const std::vector<Tensor>& ref = job.reference ? *job.reference : reference;
    PRISM_ASSIGN_OR_RETURN(Measurement m, measurer.Measure(*job.cubin, *job.launches, *job.program,
                                                           in, ref, options, caches[&in]));
    return MeasurementJson(m);
  };
  PRISM_ASSIGN_OR_RETURN(
      std::vector<std::optional<ChildResult>> results,
      RunSequenceInChild(static_cast<int>(jobs.size()), measure, options.timeout,
                         [&](int) { return absl::Now() < deadline; }));
  std::vector<absl::StatusOr<Measurement>> out;
  for (const std::optional<ChildResult>& r : results) {
    if (!r) {
      out.push_back(absl::DeadlineExceededError("not started: the deadline passed"));
      continue;
    }
    absl::StatusOr<std::string> payload = FromChild(*r, "the measurement");
    if (!payload.ok()) {
      out.push_back(payload.status());
    } else {
      out.push_back(MeasurementFromJson(*payload));
    }
  }
  return out;
}

absl::StatusOr<Measurement> MeasureInChild(int ordinal, const std::string& cubin,
                                           const std::vector<codegen::LaunchConfig>& launches,
                                           const BlockProgram& program,
                                           const std::vector<Tensor>& inputs,
                                           const std::vector<Tensor>& reference,
                                           const MeasureOptions& options) {
  PRISM_ASSIGN_OR_RETURN(std::vector<absl::StatusOr<Measurement>> all,
                         MeasureAllInChild(ordinal, {MeasureJob{&cubin, &launches, &program}},
                                           inputs, reference, options));
  return std::move(all[0]);
}

// ---- compile cache --------------------------------------------------------------------------

CompileCache::CompileCache(std::string dir) : dir_(std::move(dir)) {}

std::string CompileCache::Key(absl::string_view source, int sm, absl::string_view nvrtc_version) {
  uint64_t h = StableHashBytes(source);
  h = HashCombine(h, static_cast<uint64_t>(sm));
  h = HashCombine(h, StableHashBytes(nvrtc_version));
  return HashToHex(h);
}

std::optional<std::string> CompileCache::Lookup(const std::string& key) const {
  if (dir_.empty()) return std::nullopt;
  std::ifstream in(std::filesystem::path(dir_) / (key + ".cubin"), std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

absl::Status CompileCache::Store(const std::string& key, absl::string_view cubin) const {
  if (dir_.empty()) return absl::OkStatus();
  std::error_code ec;
  std::filesystem::create_directories(dir_, ec);
  const std::filesystem::path final_path = std::filesystem::path(dir_) / (key + ".cubin");
  const std::filesystem::path tmp =
      std::filesystem::path(dir_) / absl::StrCat(key, ".cubin.tmp", getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out || !out.write(cubin.data(), static_cast<std::streamsize>(cubin.size()))) {
      return absl::InternalError(absl::StrCat("cannot write the compile cache '",
                                              final_path.string(),
                                              "': ", ec ? ec.message() : strerror(errno)));
    }
  }
  std::filesystem::rename(tmp, final_path, ec);
  if (ec) {
    return absl::InternalError(
        absl::StrCat("cannot write the compile cache '", final_path.string(), "': ", ec.message()));
  }
  return absl::OkStatus();
}

absl::StatusOr<CachedCompile> CompileCached(const CompileCache& cache, absl::string_view source,
                                            int sm) {
  PRISM_ASSIGN_OR_RETURN(std::string version, codegen::NvrtcVersion());
  const std::string key = CompileCache::Key(source, sm, version);
  if (std::optional<std::string> hit = cache.Lookup(key)) return CachedCompile{*hit, true};
  PRISM_ASSIGN_OR_RETURN(codegen::NvrtcResult r, codegen::CompileWithNvrtc(source, sm));
  (void)cache.Store(key, r.cubin);
  return CachedCompile{std::move(r.cubin), false};
}

namespace {
void PutU64(std::string& out, uint64_t v) { out.append(reinterpret_cast<const char*>(&v), 8); }
bool GetU64(const std::string& in, size_t& pos, uint64_t& v) {
  if (pos + 8 > in.size()) return false;
  std::memcpy(&v, in.data() + pos, 8);
  pos += 8;
  return true;
}
bool GetBytes(const std::string& in, size_t& pos, std::string& out) {
  uint64_t len = 0;
  if (!GetU64(in, pos, len) || len > in.size() - pos) return false;
  out = in.substr(pos, len);
  pos += len;
  return true;
}
// A compilation's framing: u64 kind (0 compiled, 1 cache hit, else 2 + status code), u64
// length, the cubin or the message.
void PutCompile(std::string& out, const absl::StatusOr<CachedCompile>& c) {
  if (c.ok()) {
    PutU64(out, c->cache_hit ? 1 : 0);
    PutU64(out, c->cubin.size());
    out += c->cubin;
  } else {
    PutU64(out, 2 + static_cast<uint64_t>(c.status().code()));
    PutU64(out, c.status().message().size());
    out += std::string(c.status().message());
  }
}
// PutCompile's inverse; false when `in` is truncated.
bool GetCompile(const std::string& in, size_t& pos, absl::StatusOr<CachedCompile>& c) {
  uint64_t kind = 0;
  std::string bytes;
  if (!GetU64(in, pos, kind) || !GetBytes(in, pos, bytes)) return false;
  if (kind < 2) {
    c = CachedCompile{std::move(bytes), kind == 1};
  } else {
    c = absl::Status(static_cast<absl::StatusCode>(kind - 2), bytes);
  }
  return true;
}
}  // namespace

int CompileThreads(int requested, int reserve) {
  if (requested > 0) return requested;
  const int cores = static_cast<int>(std::thread::hardware_concurrency());
  return std::clamp(cores - reserve, 1, 16);
}

absl::StatusOr<std::vector<absl::StatusOr<CachedCompile>>> CompileInChild(
    const CompileCache& cache, const std::vector<std::string>& sources, int sm,
    absl::Duration timeout, int threads) {
  // One PutCompile per source.
  PRISM_ASSIGN_OR_RETURN(
      ChildResult r, RunInChild(
                         [&]() -> absl::StatusOr<std::string> {
                           std::vector<absl::StatusOr<CachedCompile>> results(
                               sources.size(), absl::UnknownError("not run"));
                           std::atomic<size_t> next{0};
                           const size_t workers = std::max<size_t>(
                               1, std::min<size_t>(sources.size(),
                                                   static_cast<size_t>(CompileThreads(threads, 0))));
                           std::vector<std::thread> pool;
                           for (size_t w = 0; w < workers; ++w) {
                             pool.emplace_back([&] {
                               for (size_t i = next++; i < sources.size(); i = next++) {
                                 results[i] = CompileCached(cache, sources[i], sm);
                               }
                             });
                           }
                           for (std::thread& t : pool) t.join();
                           std::string out;
                           for (const absl::StatusOr<CachedCompile>& c : results) {
                             PutCompile(out, c);
                           }
                           return out;
                         },
                         timeout));
  PRISM_ASSIGN_OR_RETURN(std::string payload, FromChild(r, "the compilation"));
  std::vector<absl::StatusOr<CachedCompile>> results(sources.size());
  size_t pos = 0;
  for (absl::StatusOr<CachedCompile>& c : results) {
    if (!GetCompile(payload, pos, c)) {
      return absl::InternalError("the compilation child returned a truncated result");
    }
  }
  return results;
}

absl::StatusOr<std::vector<CompiledMeasurement>> CompileAndMeasureInChild(
    int ordinal, const CompileCache& cache, int sm, const std::vector<CompileMeasureJob>& jobs,
    const std::vector<Tensor>& inputs, const std::vector<Tensor>& reference,
    const MeasureOptions& options, absl::Time deadline, int compile_threads) {
  const size_t n = jobs.size();
  // The compilations of one child: started by its first job, in job order from there, on
  // their own threads; never joined (the child _exits).
  struct Compiles {
    std::mutex mu;
    std::condition_variable cv;
    std::vector<std::optional<absl::StatusOr<CachedCompile>>> done;
    std::atomic<size_t> next{0};
    std::vector<std::thread> pool;
  };
  // Per child (fork copies them empty): the compilations, the driver and the inputs' device
  // buffers. The inputs' bytes are converted once, here, before any fork.
  std::unique_ptr<Compiles> compiles;
  SequenceMeasurer measurer;
  measurer.ordinal = ordinal;
  InputCache input_cache;
  for (const Tensor& t : inputs) input_cache.host.push_back(ToBytes(t));
  const int threads = CompileThreads(compile_threads, 1);
  // Payload per job: the wait (f64 bits), the compilation (PutCompile), then (compiled only)
  // the measurement's JSON.
  auto job = [&](int i) -> absl::StatusOr<std::string> {
    const size_t k = static_cast<size_t>(i);
    if (!compiles) {
      compiles = std::make_unique<Compiles>();
      compiles->done.resize(n);
      compiles->next = k;
      for (int w = 0; w < threads; ++w) {
        compiles->pool.emplace_back([c = compiles.get(), &jobs, &cache, sm, n] {
          for (size_t j = c->next++; j < n; j = c->next++) {
            absl::StatusOr<CachedCompile> r = CompileCached(cache, *jobs[j].source, sm);
            {
              std::lock_guard<std::mutex> lock(c->mu);
              c->done[j] = std::move(r);
            }
            c->cv.notify_all();
          }
        });
      }
    }
    const auto wait_start = std::chrono::steady_clock::now();
    absl::StatusOr<CachedCompile> compiled = absl::UnknownError("not compiled");
    {
      std::unique_lock<std::mutex> lock(compiles->mu);
      compiles->cv.wait(lock, [&] { return compiles->done[k].has_value(); });
      compiled = std::move(*compiles->done[k]);
    }
    const double waited =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - wait_start).count();
    std::string out;
    uint64_t bits = 0;
    std::memcpy(&bits, &waited, 8);
    PutU64(out, bits);
    PutCompile(out, compiled);
    if (!compiled.ok()) return out;
    PRISM_ASSIGN_OR_RETURN(Measurement m,
                           measurer.Measure(compiled->cubin, *jobs[k].launches, *jobs[k].program,
                                            inputs, reference, options, input_cache));
    const std::string mj = MeasurementJson(m);
    PutU64(out, mj.size());
    out += mj;
    return out;
  };
  PRISM_ASSIGN_OR_RETURN(
      std::vector<std::optional<ChildResult>> results,
      RunSequenceInChild(static_cast<int>(n), job, options.timeout,
                         [&](int) { return absl::Now() < deadline; }));
  std::vector<CompiledMeasurement> out(n);
  for (size_t k = 0; k < n; ++k) {
    CompiledMeasurement& o = out[k];
    const std::optional<ChildResult>& r = results[k];
    if (!r) {
      o.compiled = absl::DeadlineExceededError("not compiled: the deadline passed");
      o.measured = absl::DeadlineExceededError("not started: the deadline passed");
      continue;
    }
    if (r->kind != ChildResult::Kind::kOk) {
      // Failed, crashed or timed out while measuring: the compilation had succeeded (its errors
      // come back in an OK payload), but its cubin went with the child.
      o.compiled = CachedCompile{};
      o.measured = FromChild(*r, "the measurement").status();
      continue;
    }
    const std::string& p = r->payload;
    size_t pos = 0;
    uint64_t bits = 0;
    std::string mj;
    if (!GetU64(p, pos, bits) || !GetCompile(p, pos, o.compiled) ||
        (o.compiled.ok() && !GetBytes(p, pos, mj))) {
      return absl::InternalError("the compile-and-measure child returned a truncated result");
    }
    std::memcpy(&o.compile_wait_s, &bits, 8);
    o.measured = o.compiled.ok()
                     ? absl::StatusOr<Measurement>(MeasurementFromJson(mj))
                     : absl::FailedPreconditionError("not measured: it did not compile");
  }
  return out;
}

}  // namespace prism::runtime
