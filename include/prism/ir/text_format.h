// The `.prism` text format: small and readable, one statement per line.
//
//   # rmsnorm_linear at batch 8
//   X = input f16[16, 4096]
//   W = input f16[4096, 6144]
//   Y = matmul(rms_norm(X, -1), W)
//   output Y
//
// Grammar (docs/ir_semantics.md has the full reference):
//   file      := { line }
//   line      := [ statement ] [ comment ] NEWLINE
//   statement := NAME '=' 'input' DTYPE '[' INT { ',' INT } ']'
//              | NAME '=' call              (a bare `Y = X` rename is rejected)
//              | 'output' NAME
//   call      := OP '(' [ arg { ',' arg } ] ')'   (at most 256 nested calls)
//   arg       := NAME | call | NUMBER | 'eps' '=' NUMBER
//   comment   := '#' any text
// Attributes are the trailing numeric arguments: scale(x, 0.5), sum(x, -1), rms_norm(x, -1),
// rms_norm(x, -1, eps=1e-5), softmax(x, -1), concat(a, b, 1). Names may be used before the line
// that defines them (the program is a dataflow graph); cycles are rejected.
//
// Round trip: PrintProgram(ParseProgram(t)) == t for text in canonical layout (single spaces
// as above, named statements in topological order, outputs last), comments and blank lines
// included; ParseProgram(PrintProgram(p)) == p for every Program p.
#ifndef PRISM_IR_TEXT_FORMAT_H_
#define PRISM_IR_TEXT_FORMAT_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "prism/ir/program.h"

namespace prism {

// Parses and validates. Every error is InvalidArgument with the message
//   "[FILENAME:]LINE:COL: found <what was found>, expected <what was expected>"
// or, for validation errors after parsing, "[FILENAME:]LINE:COL: <ProgramBuilder message>".
// `filename` (may be empty) only prefixes messages.
absl::StatusOr<Program> ParseProgram(absl::string_view text, absl::string_view filename = "");

// Canonical text. Anonymous tensors used once are printed nested inside their user; others
// get generated names (t<N>, avoiding clashes).
std::string PrintProgram(const Program& program);

// Formats a double as the shortest decimal that reads back to the same value ("0.5", "1e-06").
std::string FormatNumber(double value);

}  // namespace prism

#endif  // PRISM_IR_TEXT_FORMAT_H_
