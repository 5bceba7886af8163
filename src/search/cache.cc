#include "prism/search/cache.h"

#include <filesystem>
#include <system_error>
#include <utility>

#include "absl/strings/str_cat.h"
#include "prism/base/paths.h"

namespace prism::search {

FamilyCache::FamilyCache(std::string dir) : dir_(std::move(dir)) {}

std::optional<nlohmann::json> FamilyCache::Get(const std::string& key) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = entries_.find(key);
  if (it != entries_.end()) return it->second;
  if (dir_.empty()) return std::nullopt;
  absl::StatusOr<std::string> text = ReadFile((std::filesystem::path(dir_) / (key + ".json")).string());
  if (!text.ok()) return std::nullopt;
  nlohmann::json j = nlohmann::json::parse(*text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object() || j.value("format", "") != "prism.search_cache" ||
      j.value("version", 0) != 1) {
    return std::nullopt;
  }
  entries_[key] = j;
  return j;
}

absl::Status FamilyCache::Put(const std::string& key, nlohmann::json entry) {
  std::lock_guard<std::mutex> lock(mu_);
  entries_[key] = entry;
  if (dir_.empty()) return absl::OkStatus();
  std::error_code ec;
  std::filesystem::create_directories(dir_, ec);
  if (ec) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot create the cache directory '", dir_, "': ", ec.message()));
  }
  return WriteFile((std::filesystem::path(dir_) / (key + ".json")).string(), entry.dump(1));
}

}  // namespace prism::search
