// A toolchain linking prism: optimizes gated_mlp (batch 1) without a GPU (the cost model
// selects, as `prism optimize --no-gpu`) and prints how to launch the selected kernels.
//
//   consumer                 # gated_mlp, batch 1
//   consumer NAME BATCH      # another built-in workload
//
// Exit codes: 0 ok; 1 prism reported an error (printed to stderr).
#include <cstdlib>
#include <iostream>
#include <string>

#include "prism/prism.h"

int main(int argc, char** argv) {
  const std::string name = argc > 1 ? argv[1] : "gated_mlp";
  const int batch = argc > 2 ? std::atoi(argv[2]) : 1;

  absl::StatusOr<prism::Program> program = prism::BuiltinWorkload(name, batch);
  if (!program.ok()) {
    std::cerr << "consumer: " << program.status().message() << "\n";
    return 1;
  }
  prism::OptimizeOptions options;
  options.gpu_mode = prism::GpuMode::kOff;
  options.program_label = name;
  options.build_report = false;
  absl::StatusOr<prism::Result> result = prism::Optimize(*program, options);
  if (!result.ok()) {
    std::cerr << "consumer: " << result.status().message() << "\n";
    return 1;
  }
  absl::StatusOr<std::string> data = prism::DataDir();
  std::cout << "prism " << prism::Version() << " (data: " << (data.ok() ? *data : "?") << ")\n"
            << name << " b=" << batch << ": family #" << result->family << ", "
            << result->kernels.size() << " kernel(s), "
            << (result->selection == prism::Selection::kMeasured ? "measured" : "cost model")
            << ", cost lower bound " << result->cost_us << " us\n";
  for (const prism::KernelLaunch& k : result->kernels) {
    std::cout << "launch " << k.function << " grid=(" << k.grid[0] << "," << k.grid[1] << ","
              << k.grid[2] << ") block=(" << k.block[0] << "," << k.block[1] << "," << k.block[2]
              << ") dynamic_smem=" << k.dynamic_smem_bytes << " args=";
    for (size_t i = 0; i < k.args.size(); ++i) {
      std::cout << (i ? "," : "") << k.args[i].tensor << (k.args[i].written ? ":w" : ":r");
    }
    std::cout << "\n";
  }
  return 0;
}
