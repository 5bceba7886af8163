#include "prism/equiv/union_find.h"

#include "prism/base/check.h"

namespace prism::equiv {

EClassId UnionFind::MakeSet() {
  uint32_t id = static_cast<uint32_t>(parent_.size());
  PRISM_CHECK(id != EClassId::Invalid().value(), "e-class id space exhausted");
  parent_.push_back(id);
  return EClassId(id);
}

EClassId UnionFind::Find(EClassId id) {
  PRISM_CHECK(id.valid() && id.value() < parent_.size(), "e-class id ", id.value(), " out of range");
  uint32_t root = id.value();
  while (parent_[root] != root) root = parent_[root];
  uint32_t cur = id.value();
  while (parent_[cur] != root) {  // full path compression
    uint32_t next = parent_[cur];
    parent_[cur] = root;
    cur = next;
  }
  return EClassId(root);
}

EClassId UnionFind::FindNoCompress(EClassId id) const {
  PRISM_CHECK(id.valid() && id.value() < parent_.size(), "e-class id ", id.value(), " out of range");
  uint32_t root = id.value();
  while (parent_[root] != root) root = parent_[root];
  return EClassId(root);
}

bool UnionFind::IsRoot(EClassId id) const {
  PRISM_CHECK(id.valid() && id.value() < parent_.size(), "e-class id ", id.value(), " out of range");
  return parent_[id.value()] == id.value();
}

void UnionFind::Link(EClassId root, EClassId child) {
  PRISM_CHECK(IsRoot(root) && IsRoot(child) && root != child, "Link needs two distinct roots");
  parent_[child.value()] = root.value();
}

}  // namespace prism::equiv
