// Union-find over e-class ids (egg: unionfind.rs), with full path compression. Ids are dense
// 32-bit integers handed out in order by MakeSet, so the same sequence of calls always gives
// the same ids. Which root survives a union is the caller's choice (Link).
//
//   UnionFind uf;
//   EClassId a = uf.MakeSet(), b = uf.MakeSet();
//   uf.Link(/*root=*/a, /*child=*/b);
//   uf.Find(b) == a;                  // true
#ifndef PRISM_EQUIV_UNION_FIND_H_
#define PRISM_EQUIV_UNION_FIND_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "prism/base/id.h"

namespace prism::equiv {

struct EClassTag {};
// An e-class id. Every id is also the id of the exact term it was created for (egraph.h).
using EClassId = Id<EClassTag>;

class UnionFind {
 public:
  // A new singleton set; its id is size() before the call.
  EClassId MakeSet();
  size_t size() const { return parent_.size(); }

  // The root of `id`'s set, compressing the path (amortized near-constant).
  EClassId Find(EClassId id);
  // The root without modifying the structure (O(depth)).
  EClassId FindNoCompress(EClassId id) const;
  bool IsRoot(EClassId id) const;

  // Makes root `root` the parent of root `child` (PRISM_CHECK both are roots and differ).
  void Link(EClassId root, EClassId child);

 private:
  std::vector<uint32_t> parent_;
};

}  // namespace prism::equiv

#endif  // PRISM_EQUIV_UNION_FIND_H_
