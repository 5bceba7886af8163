#include "prism/equiv/language.h"

#include <vector>

#include "absl/container/flat_hash_map.h"
#include "prism/base/check.h"

namespace prism::equiv {
namespace {

struct Tables {
  std::vector<TermOpInfo> infos;
  absl::flat_hash_map<Symbol, size_t> by_symbol;
  Tables() {
#define PRISM_TERM_OP(e, name, arity, cat, operands) \
  infos.push_back(TermOpInfo{TermOp::e, name, arity, TermOpCategory::cat, operands, Symbol(name)});
#include "prism/equiv/term_ops.def"
#undef PRISM_TERM_OP
    for (size_t i = 0; i < infos.size(); ++i) by_symbol.emplace(infos[i].symbol, i);
  }
};

const Tables& GetTables() {
  static const Tables* t = new Tables();
  return *t;
}

}  // namespace

const TermOpInfo& GetTermOpInfo(TermOp op) {
  const Tables& t = GetTables();
  size_t i = static_cast<size_t>(op);
  PRISM_CHECK(i < t.infos.size());
  return t.infos[i];
}

absl::Span<const TermOpInfo> AllTermOps() { return GetTables().infos; }

const TermOpInfo* FindTermOp(Symbol op) {
  const Tables& t = GetTables();
  auto it = t.by_symbol.find(op);
  return it == t.by_symbol.end() ? nullptr : &t.infos[it->second];
}

}  // namespace prism::equiv
