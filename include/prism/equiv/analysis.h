// E-class analyses (egg: Analysis with make / merge / modify). An analysis attaches a datum
// to every e-class, computed from the class's e-nodes and kept up to date through unions and
// Rebuild (which re-runs `make` on the parents of classes whose datum changed, egg's
// upward merge). Data form a join semi-lattice: Join only moves a datum up.
//
// The EGraph talks to an analysis through the untyped `Analysis` interface; most analyses
// derive from TypedAnalysis<Data>, which stores one Data per e-class:
//
//   struct Depth : TypedAnalysis<int> {
//     absl::string_view name() const override { return "depth"; }
//     int Make(const EGraph& g, const ENode& n) override { ... 1 + max over children ... }
//     MergeResult Join(int& into, const int& from) override { ... keep the minimum ... }
//   };
//   EGraph g(&ctx, std::make_unique<Depth>());
//
// tensor_analysis.h provides the analysis of the tensor term language (symbolic shapes,
// constant folding, axis dependence).
#ifndef PRISM_EQUIV_ANALYSIS_H_
#define PRISM_EQUIV_ANALYSIS_H_

#include <string>
#include <utility>
#include <vector>

#include "absl/strings/string_view.h"
#include "prism/base/check.h"
#include "prism/equiv/union_find.h"

namespace prism::equiv {

class EGraph;
struct ENode;

// Which sides of a join changed: `root_changed` when the surviving datum differs from what it
// was, `other_changed` when it differs from the absorbed datum (egg's DidMerge).
struct MergeResult {
  bool root_changed = false;
  bool other_changed = false;
};

class Analysis {
 public:
  virtual ~Analysis() = default;
  virtual absl::string_view name() const = 0;

  // A new class `id` was created holding only `node` (children canonical).
  virtual void OnAdd(const EGraph& g, EClassId id, const ENode& node) = 0;
  // Re-derives the datum of `node` (a member of root class `id`, children canonical) and
  // joins it into the class's datum; true if the class's datum changed.
  virtual bool OnJoin(const EGraph& g, EClassId id, const ENode& node) = 0;
  // Root `other` is being absorbed into root `root`: joins other's datum into root's.
  virtual MergeResult OnMerge(EClassId root, EClassId other) = 0;
  // Called after a class's datum was created or changed; may add nodes and union classes
  // (e.g. constant folding adds the literal). Must terminate: adding what is already there
  // is a no-op.
  virtual void Modify(EGraph& g, EClassId id) { (void)g, (void)id; }
  // What is changing the graph now (e.g. "rule split-k"; "" outside rewrites), so that
  // diagnostics can name the rule that produced a problem.
  virtual void SetOrigin(absl::string_view origin) { (void)origin; }
  // One-line rendering of a root class's datum for EGraph::Dump ("" = nothing).
  virtual std::string Describe(EClassId id) const { (void)id; return ""; }
};

template <typename Data>
class TypedAnalysis : public Analysis {
 public:
  // The datum of root class `id` (PRISM_CHECKs that one was made).
  const Data& data(EClassId id) const {
    PRISM_CHECK(id.value() < data_.size() && made_[id.value()], "no analysis data for e", id.value());
    return data_[id.value()];
  }

  void OnAdd(const EGraph& g, EClassId id, const ENode& node) final {
    Data d = Make(g, node);
    Slot(id) = std::move(d);
  }
  bool OnJoin(const EGraph& g, EClassId id, const ENode& node) final {
    Data d = Make(g, node);
    return Join(Slot(id), d).root_changed;
  }
  MergeResult OnMerge(EClassId root, EClassId other) final {
    Data absorbed = data(other);
    return Join(Slot(root), absorbed);
  }

 protected:
  // The datum of one node; children are canonical and have data.
  virtual Data Make(const EGraph& g, const ENode& node) = 0;
  // Joins `from` into `into`.
  virtual MergeResult Join(Data& into, const Data& from) = 0;

 private:
  Data& Slot(EClassId id) {
    if (id.value() >= data_.size()) {
      data_.resize(id.value() + 1);
      made_.resize(id.value() + 1, false);
    }
    made_[id.value()] = true;
    return data_[id.value()];
  }
  std::vector<Data> data_;
  std::vector<bool> made_;
};

}  // namespace prism::equiv

#endif  // PRISM_EQUIV_ANALYSIS_H_
