// Interned names for e-graph operators, axes and rule names: a Symbol is a 32-bit handle into
// one process-wide table, so equality and hashing are integer operations.
//
//   Symbol mm("matmul");
//   mm == Symbol("matmul");      // true: same handle
//   mm.name();                   // "matmul"
//
// Symbol handles depend on the order in which names were first interned, which differs
// between processes; nothing observable in prism may depend on them (orders use names, see
// SymbolNameLess). The table is thread-safe; symbols are never freed.
#ifndef PRISM_EQUIV_SYMBOL_H_
#define PRISM_EQUIV_SYMBOL_H_

#include <cstdint>
#include <utility>

#include "absl/strings/string_view.h"

namespace prism::equiv {

class Symbol {
 public:
  // The empty name "".
  Symbol() = default;
  // Interns `name` (any bytes).
  explicit Symbol(absl::string_view name);

  // The interned name; valid for the life of the process.
  absl::string_view name() const;
  bool empty() const { return id_ == 0; }
  // The handle (process-local; see the file comment).
  uint32_t handle() const { return id_; }
  // The symbol whose handle() is `handle` (PRISM_CHECKs that it exists).
  static Symbol FromHandle(uint32_t handle);

  friend bool operator==(Symbol a, Symbol b) { return a.id_ == b.id_; }
  friend bool operator!=(Symbol a, Symbol b) { return a.id_ != b.id_; }
  template <typename H>
  friend H AbslHashValue(H h, Symbol s) {
    return H::combine(std::move(h), s.id_);
  }

 private:
  uint32_t id_ = 0;
};

// Orders symbols by name (deterministic across processes).
struct SymbolNameLess {
  bool operator()(Symbol a, Symbol b) const { return a.name() < b.name(); }
};

}  // namespace prism::equiv

#endif  // PRISM_EQUIV_SYMBOL_H_
