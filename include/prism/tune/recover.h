// What to do with a program that tune::Optimize refused: cut it, run it as a library kernel, or
// give up (docs/optimize.md: "Programs split in two", "Ops that run as kernels of their own",
// "The fallback"). prism::OptimizeParts and `prism optimize` both follow these decisions, so
// the library and the CLI cut every program alike:
//
//   absl::StatusOr<tune::TuneResult> r = tune::Optimize(program, target, options);
//   if (!r.ok()) {
//     PRISM_ASSIGN_OR_RETURN(tune::Recovery next,
//                            tune::Recover(program, r.status(), label, depth, fallback));
//     switch (next.kind) { ... }  // kFail: return next.error; kCut: optimize next.parts; ...
//   }
#ifndef PRISM_TUNE_RECOVER_H_
#define PRISM_TUNE_RECOVER_H_

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "prism/ir/program.h"

namespace prism::tune {

// How many cuts were made above a part: chained-matmul cuts (at most search::kMaxChainedCuts
// deep) and library-op and fallback cuts (at most search::kMaxLibraryCuts along a path).
struct CutDepth {
  int chained = 0;
  int library = 0;
};

// The next step for a program that Optimize refused.
struct Recovery {
  enum class Kind {
    kFail,           // return `error`
    kLibraryKernel,  // the fallback: optimize the program again with search.library_kernel
    kCut,            // optimize `parts` in order, each at `depth`; then write `manifest`
  };
  Kind kind = Kind::kFail;
  absl::Status error;     // kFail: Optimize's error, or search::LibraryCutLimitError()
  bool fallback = false;  // kLibraryKernel, and a kCut made by the fallback
  // kCut: parts[0] computes tensor `cut` of the program, parts[1] the output from it; `names`
  // are their names (directories), `manifest` DIR/split.json (search::SplitManifest), `why`
  // starts the CLI's split line ("a concat runs as a kernel of its own", "no family of the
  // whole program can be generated").
  TensorId cut;  // invalid unless kCut
  Program parts[2];
  std::string names[2];
  std::string manifest;
  std::string why;
  CutDepth depth;  // the parts' depth
};

// The decision for `program` (one output), refused by Optimize with `error`, at `depth`;
// `label` is the program's label for the manifest. In order:
// 1. `error` not FailedPrecondition (a bad option, a file error): kFail with it.
// 2. An op that no block op runs (search::SplitAtLibraryOp): kCut there, depth.library + 1;
//    past search::kMaxLibraryCuts, kFail with search::LibraryCutLimitError().
// 3. A matmul that reads a wide matmul (search::SplitAtChainedMatmul), while depth.chained <
//    search::kMaxChainedCuts: kCut there, depth.chained + 1.
// 4. With `fallback` and a "no family" error (IsNoFamilyError): one op of its inputs
//    (search::RunsAsOneLibraryKernel) is kLibraryKernel; a larger program kCut at
//    search::SplitForFallback, depth.library + 1 (the same limit as 2).
// 5. Otherwise kFail with `error`.
// Errors: InvalidArgument for a program with more than one output and a FailedPrecondition
// `error` (OptimizeParts and the CLI take the outputs one by one first).
absl::StatusOr<Recovery> Recover(const Program& program, const absl::Status& error,
                                 const std::string& label, CutDepth depth, bool fallback);

// The error of a fallback whose library kernel failed too: `library_error` itself unless it is
// a "no family" error, then `no_family` with "; nor as a library kernel: <library_error's
// message>" appended.
absl::Status LibraryKernelError(const absl::Status& no_family, const absl::Status& library_error);

}  // namespace prism::tune

#endif  // PRISM_TUNE_RECOVER_H_
