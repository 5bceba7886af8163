#include "prism/equiv/symbol.h"

#include <deque>
#include <mutex>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "prism/base/check.h"

namespace prism::equiv {
namespace {

struct SymbolTable {
  std::mutex mu;
  std::deque<std::string> names{std::string()};  // handle 0 = ""
  absl::flat_hash_map<std::string, uint32_t> index{{std::string(), 0}};
};

SymbolTable& TheSymbolTable() {
  static SymbolTable* table = new SymbolTable();  // never destroyed: symbols outlive statics
  return *table;
}

}  // namespace

Symbol::Symbol(absl::string_view name) {
  SymbolTable& t = TheSymbolTable();
  std::lock_guard<std::mutex> lock(t.mu);
  auto it = t.index.find(name);
  if (it != t.index.end()) {
    id_ = it->second;
    return;
  }
  id_ = static_cast<uint32_t>(t.names.size());
  t.names.emplace_back(name);
  t.index.emplace(std::string(name), id_);
}

Symbol Symbol::FromHandle(uint32_t handle) {
  SymbolTable& t = TheSymbolTable();
  {
    std::lock_guard<std::mutex> lock(t.mu);
    PRISM_CHECK(handle < t.names.size(), "no symbol with handle ", handle);
  }
  Symbol s;
  s.id_ = handle;
  return s;
}

absl::string_view Symbol::name() const {
  SymbolTable& t = TheSymbolTable();
  std::lock_guard<std::mutex> lock(t.mu);
  return t.names[id_];  // deque elements never move
}

}  // namespace prism::equiv
