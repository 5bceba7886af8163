#include "prism/tune/recover.h"

#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "prism/base/status.h"
#include "prism/search/search.h"
#include "prism/tune/tune.h"

namespace prism::tune {
namespace {

template <typename Split>
Recovery CutAt(const Program& program, Split& split, TensorId cut, const std::string& label,
               std::string why, CutDepth depth) {
  Recovery r;
  r.kind = Recovery::Kind::kCut;
  r.cut = cut;
  r.manifest = search::SplitManifest(label, program, split);
  for (int i = 0; i < 2; ++i) {
    r.parts[i] = std::move(split.parts[i]);
    r.names[i] = std::move(split.names[i]);
  }
  r.why = std::move(why);
  r.depth = depth;
  return r;
}

Recovery Fail(absl::Status error) {
  Recovery r;
  r.error = std::move(error);
  return r;
}

}  // namespace

absl::StatusOr<Recovery> Recover(const Program& program, const absl::Status& error,
                                 const std::string& label, CutDepth depth, bool fallback) {
  if (error.code() != absl::StatusCode::kFailedPrecondition) return Fail(error);
  if (program.outputs().size() != 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("Recover: the program must have one output, got ", program.outputs().size()));
  }
  // An op no block op runs (a concat the families do not fuse, a reduction over another dim
  // than the last): a kernel of its own.
  PRISM_ASSIGN_OR_RETURN(std::optional<search::LibrarySplit> at_op,
                         search::SplitAtLibraryOp(program));
  if (at_op) {
    if (depth.library >= search::kMaxLibraryCuts) return Fail(search::LibraryCutLimitError());
    std::string why = absl::StrCat(search::LibraryOpText(program, program.node(at_op->op)),
                                   " runs as a kernel of its own");
    return CutAt(program, *at_op, at_op->cut, label, std::move(why),
                 {depth.chained, depth.library + 1});
  }
  if (depth.chained < search::kMaxChainedCuts) {
    PRISM_ASSIGN_OR_RETURN(std::optional<search::ChainedSplit> chained,
                           search::SplitAtChainedMatmul(program));
    if (chained) {
      return CutAt(program, *chained, chained->chain.cut, label,
                   "no family of the whole program can be generated",
                   {depth.chained + 1, depth.library});
    }
  }
  // The fallback (docs/optimize.md): no block-graph family of this program generates, so one
  // op of its inputs runs as a library kernel, and anything larger is cut until its parts do.
  if (!fallback || !IsNoFamilyError(error)) return Fail(error);
  if (search::RunsAsOneLibraryKernel(program)) {
    Recovery r;
    r.kind = Recovery::Kind::kLibraryKernel;
    r.fallback = true;
    return r;
  }
  PRISM_ASSIGN_OR_RETURN(std::optional<search::LibrarySplit> cut,
                         search::SplitForFallback(program));
  if (!cut) return Fail(error);
  if (depth.library >= search::kMaxLibraryCuts) return Fail(search::LibraryCutLimitError());
  Recovery r =
      CutAt(program, *cut, cut->cut, label, "no family of the whole program can be generated",
            {depth.chained, depth.library + 1});
  r.fallback = true;
  return r;
}

absl::Status LibraryKernelError(const absl::Status& no_family, const absl::Status& library_error) {
  if (!IsNoFamilyError(library_error)) return library_error;
  return absl::Status(
      no_family.code(),
      absl::StrCat(no_family.message(), "; nor as a library kernel: ", library_error.message()));
}

}  // namespace prism::tune
