// FamilyCache: shape-independent reuse of search results (DESIGN.md §2.3, issue 6).
//
// A search records, for every candidate it proved, the structure that produced it (the block-op
// sequence and the resolved maps, with sizes referred to the Program's inputs rather than given
// as numbers). The record is keyed by the Program's STRUCTURE — ops, operands, attributes,
// dtypes, ranks and which dims are 1, but not the other sizes — together with the target and
// the configuration fields that shape generation. A later search of the same structure at
// other sizes rebuilds those candidates at its own sizes and validates, proves and prunes them
// again (proofs and hardware verdicts depend on the sizes), skipping target saturation,
// generation and map resolution. A hit therefore only searches the structures found for the
// first sizes: a structure that was invalid or unprovable there is not retried.
//
//   search::FamilyCache cache("/tmp/prism-cache");   // or FamilyCache() for memory only
//   config.cache = &cache;
//   Search(gqa_b1, config, h200);                    // miss: full search, recorded
//   Search(gqa_b8, config, h200);                    // hit: result.cache_hit == true
//
// Thread-safe. Entries are JSON ("format": "prism.search_cache", "version": 1); an entry that
// does not parse or has another version is treated as a miss and rewritten.
#ifndef PRISM_SEARCH_CACHE_H_
#define PRISM_SEARCH_CACHE_H_

#include <map>
#include <mutex>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "nlohmann/json.hpp"

namespace prism::search {

class FamilyCache {
 public:
  // Memory only when `dir` is empty; else entries are also read from and written to
  // DIR/<key>.json (DIR is created on the first write).
  explicit FamilyCache(std::string dir = "");

  // The entry for `key`: from memory, else from DIR/<key>.json; nullopt when absent or when
  // the file is not a valid entry.
  std::optional<nlohmann::json> Get(const std::string& key);
  // Stores `entry` in memory and, with a directory, in DIR/<key>.json. Errors: the file could
  // not be written (the memory entry is kept).
  absl::Status Put(const std::string& key, nlohmann::json entry);

  const std::string& dir() const { return dir_; }

 private:
  std::string dir_;
  std::mutex mu_;
  std::map<std::string, nlohmann::json> entries_;
};

}  // namespace prism::search

#endif  // PRISM_SEARCH_CACHE_H_
