// libFuzzer target for the printer and parser on *valid* programs: the input bytes seed the
// random program generator (tests/ir/testdata/random_program.h), so every execution checks the
// round-trip invariants on a program that ProgramBuilder accepts — byte-level fuzzing of the
// parser (parse_fuzzer.cc) rarely produces one.
//
// Invariants: canonical programs satisfy ParseProgram(PrintProgram(p)) == p; any program keeps
// its structural hash through print→parse and through JSON, and printing is a fixpoint. The
// remaining bytes are then spliced into the printed text and the result parsed, to explore
// near-valid text.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

#include "ir/testdata/random_program.h"
#include "prism/base/check.h"
#include "prism/ir/json.h"
#include "prism/ir/program.h"
#include "prism/ir/text_format.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 9) return 0;
  uint64_t seed;
  std::memcpy(&seed, data, sizeof seed);
  const uint8_t flags = data[8];
  prism::testing::RandomProgramOptions options;
  options.canonical = (flags & 1) != 0;
  options.comments = (flags & 2) != 0;
  options.max_statements = 1 + (flags >> 2) % 8;
  options.max_depth = 1 + (flags >> 5) % 3;
  const prism::Program p = prism::testing::RandomProgram(seed, options);

  const std::string text = prism::PrintProgram(p);
  absl::StatusOr<prism::Program> q = prism::ParseProgram(text);
  PRISM_CHECK(q.ok(), "printed program does not parse: ", q.status().ToString(), "\n", text);
  if (options.canonical) PRISM_CHECK(*q == p, "parse(print(p)) != p\n", text);
  PRISM_CHECK(q->StructuralHash() == p.StructuralHash(), "structure changed\n", text);
  PRISM_CHECK(prism::PrintProgram(*q) == text, "printing is not a fixpoint\n", text);

  absl::StatusOr<prism::Program> j = prism::ProgramFromJson(prism::ProgramToJson(p));
  PRISM_CHECK(j.ok(), "JSON export does not import: ", j.status().ToString());
  if (!options.comments) PRISM_CHECK(*j == p, "JSON round trip changed the program\n", text);

  // Splice the rest of the input into the text at a position chosen by its first byte.
  if (size > 10) {
    const size_t at = text.empty() ? 0 : data[9] * text.size() / 256;
    std::string mutated = text.substr(0, at);
    mutated.append(reinterpret_cast<const char*>(data + 10), size - 10);
    mutated.append(text.substr(at));
    absl::StatusOr<prism::Program> m = prism::ParseProgram(mutated);
    if (m.ok()) {
      const std::string printed = prism::PrintProgram(*m);
      absl::StatusOr<prism::Program> n = prism::ParseProgram(printed);
      PRISM_CHECK(n.ok() && *n == *m, "mutated program does not round-trip\n", printed);
    } else {
      PRISM_CHECK(m.status().code() == absl::StatusCode::kInvalidArgument, m.status().ToString());
    }
  }
  return 0;
}
