// `prism eval`: run the reference interpreter (ir/interpreter.h) on seeded random inputs and
// print a summary of every output, so that two builds, machines or later-stage kernels can be
// compared by checksum.
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "commands.h"
#include "format.h"
#include "nlohmann/json.hpp"
#include "prism/base/status.h"
#include "prism/ir/interpreter.h"
#include "prism/ir/tensor.h"
#include "program_source.h"

namespace prism::cli {
namespace {

inline constexpr int64_t kDefaultSeed = 1;

// NaN and ±inf have no JSON spelling: they become null (the counts say which).
nlohmann::ordered_json JsonNumber(double v) {
  if (std::isnan(v) || std::isinf(v)) return nullptr;
  return v;
}

}  // namespace

const CommandSpec& EvalSpec() {
  static const auto* spec = [] {
    auto* s = new CommandSpec{
        .path = "eval",
        .usage = "FILE | --workload NAME [--batch B] [--seed S] [--mode f64|device] [--json]",
        .summary = "Run the reference interpreter on seeded random inputs; summarize outputs.",
        .description =
            "Inputs are standard-normal values from a deterministic generator seeded with S,\n"
            "rounded to each input's dtype. --mode f64 computes every op in double precision\n"
            "(the oracle); --mode device computes like a GPU kernel: f32 arithmetic and\n"
            "accumulation, each op's result rounded to its dtype. Per output prints its shape,\n"
            "checksum (the sum of its values), min, max and mean, and the number of NaN and inf\n"
            "values (NaNs are counted, and left out of the other four).",
        .positional = "FILE",
        .max_positional = 1,
        .options = ProgramSourceOptions()};
    s->options.push_back(IntOption("--seed", "S", "seed of the random inputs", 0, INT64_MAX,
                                   absl::StrCat(kDefaultSeed)));
    s->options.push_back(ChoiceOption("--mode", "MODE", "arithmetic: the f64 oracle, or as a GPU",
                                      {"f64", "device"}, "f64"));
    s->options.push_back(FlagOption("--json", "print one JSON object instead"));
    return s;
  }();
  return *spec;
}

absl::Status RunEval(const ParsedArgs& args, Io& io) {
  PRISM_ASSIGN_OR_RETURN(LoadedProgram loaded, LoadProgram(args));
  const Program& p = loaded.program;
  const uint64_t seed = static_cast<uint64_t>(args.Int("--seed").value_or(kDefaultSeed));
  const EvalMode mode =
      args.String("--mode").value_or("f64") == "device" ? EvalMode::kDevice : EvalMode::kF64;
  const std::vector<Tensor> inputs = RandomInputs(p, seed);
  PRISM_ASSIGN_OR_RETURN(std::vector<Tensor> outputs, Evaluate(p, inputs, mode));
  if (outputs.size() != p.outputs().size()) {
    return absl::InternalError(absl::StrCat("interpreter returned ", outputs.size(),
                                            " tensors for ", p.outputs().size(), " outputs"));
  }

  if (args.Flag("--json")) {
    nlohmann::ordered_json j;
    j["program"] = loaded.label;
    j["mode"] = EvalModeName(mode);
    j["seed"] = seed;
    j["outputs"] = nlohmann::ordered_json::array();
    for (size_t i = 0; i < outputs.size(); ++i) {
      const TensorSummary s = Summarize(outputs[i]);
      j["outputs"].push_back({{"name", ExprText(p, p.outputs()[i].tensor)},
                              {"dtype", DTypeName(outputs[i].dtype)},
                              {"shape", outputs[i].shape},
                              {"checksum", JsonNumber(s.checksum)},
                              {"min", JsonNumber(s.min)},
                              {"max", JsonNumber(s.max)},
                              {"mean", JsonNumber(s.mean)},
                              {"nan_count", s.nan_count},
                              {"inf_count", s.inf_count}});
    }
    io.out << j.dump(2) << "\n";
    return absl::OkStatus();
  }

  std::string text =
      absl::StrCat("program  ", loaded.label, "\n", "mode     ", EvalModeName(mode), "\n",
                   "inputs   N(0, 1), seed ", seed, ", rounded to each input's dtype\n");
  for (size_t i = 0; i < outputs.size(); ++i) {
    const TensorSummary s = Summarize(outputs[i]);
    absl::StrAppend(&text, "\noutput ", ExprText(p, p.outputs()[i].tensor), "  ",
                    DTypeName(outputs[i].dtype), " ", ShapeToString(outputs[i].shape), "\n");
    absl::StrAppend(&text, AlignedTable({{"checksum", Significant(s.checksum, 10)},
                                         {"min", Significant(s.min, 6)},
                                         {"max", Significant(s.max, 6)},
                                         {"mean", Significant(s.mean, 6)},
                                         {"nan", absl::StrCat(s.nan_count)},
                                         {"inf", absl::StrCat(s.inf_count)}},
                                        2));
  }
  io.out << text;
  return absl::OkStatus();
}

}  // namespace prism::cli
