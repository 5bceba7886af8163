// libFuzzer target for the `.prism` parser, the printer and the JSON importer.
//
// Invariants checked on every input (a violation aborts through PRISM_CHECK, which libFuzzer
// reports as a crash with the reproducer):
//   - ParseProgram never crashes, hangs or leaks, whatever the bytes;
//   - every error is InvalidArgument with a message starting "LINE:COL: ";
//   - for a parsed program p: ParseProgram(PrintProgram(p)) == p, printing is a fixpoint, and
//     the JSON export re-imports to an equal program (comments aside);
//   - ProgramFromJsonText on the same bytes never crashes and fails only with InvalidArgument.
//
// Build: cmake -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ -DPRISM_FUZZ=ON ...
// Run:   tests/fuzz/run_fuzz.sh BUILD_DIR SECONDS
#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/strings/string_view.h"
#include "prism/base/check.h"
#include "prism/ir/json.h"
#include "prism/ir/program.h"
#include "prism/ir/text_format.h"

namespace {

bool StartsWithPosition(absl::string_view message) {
  size_t i = 0;
  auto digits = [&] {
    const size_t from = i;
    while (i < message.size() && message[i] >= '0' && message[i] <= '9') ++i;
    return i > from;
  };
  if (!digits() || i >= message.size() || message[i++] != ':') return false;
  if (!digits() || i + 1 >= message.size()) return false;
  return message[i] == ':' && message[i + 1] == ' ';
}

void CheckText(absl::string_view text) {
  absl::StatusOr<prism::Program> p = prism::ParseProgram(text);
  if (!p.ok()) {
    PRISM_CHECK(p.status().code() == absl::StatusCode::kInvalidArgument, p.status().ToString());
    PRISM_CHECK(StartsWithPosition(p.status().message()),
                "error without a position: ", p.status().ToString());
    return;
  }
  const std::string printed = prism::PrintProgram(*p);
  absl::StatusOr<prism::Program> q = prism::ParseProgram(printed);
  PRISM_CHECK(q.ok(), "printed program does not parse: ", q.status().ToString(), "\n", printed);
  PRISM_CHECK(*q == *p, "parse(print(p)) != p\n", printed);
  PRISM_CHECK(prism::PrintProgram(*q) == printed, "printing is not a fixpoint\n", printed);
  PRISM_CHECK(q->StructuralHash() == p->StructuralHash(), "hash differs\n", printed);

  absl::StatusOr<prism::Program> j = prism::ProgramFromJson(prism::ProgramToJson(*p));
  PRISM_CHECK(j.ok(), "JSON export does not import: ", j.status().ToString(), "\n", printed);
  PRISM_CHECK(j->StructuralHash() == p->StructuralHash(), "JSON round trip changed the program\n",
              printed);
  PRISM_CHECK(prism::ProgramToJson(*j) == prism::ProgramToJson(*p), "JSON is not a fixpoint\n",
              printed);
}

void CheckJson(absl::string_view text) {
  absl::StatusOr<prism::Program> p = prism::ProgramFromJsonText(text);
  if (!p.ok()) {
    PRISM_CHECK(p.status().code() == absl::StatusCode::kInvalidArgument, p.status().ToString());
    return;
  }
  absl::StatusOr<prism::Program> q = prism::ParseProgram(prism::PrintProgram(*p));
  PRISM_CHECK(q.ok(), "printed JSON program does not parse: ", q.status().ToString());
  PRISM_CHECK(q->StructuralHash() == p->StructuralHash(), "JSON → text changed the program");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const absl::string_view text(reinterpret_cast<const char*>(data), size);
  CheckText(text);
  CheckJson(text);
  return 0;
}
