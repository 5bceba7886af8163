// The subcommands of `prism`, one file each (check.cc, eval.cc, workload.cc, hw.cc,
// prune_cmd.cc, check_proof.cc, rules_cmd.cc, search_cmd.cc, optimize_cmd.cc, audit_cmd.cc).
// The registry table in cli.cc lists them; see cli.h for the conventions every command follows.
#ifndef PRISM_TOOLS_COMMANDS_H_
#define PRISM_TOOLS_COMMANDS_H_

#include "absl/status/status.h"
#include "cli.h"
#include "options.h"

namespace prism::cli {

// prism check FILE | --workload NAME [--batch B] [--target NAME] [--json]
const CommandSpec& CheckSpec();
absl::Status RunCheck(const ParsedArgs& args, Io& io);

// prism eval FILE | --workload NAME [--batch B] [--seed S] [--mode f64|device] [--json]
const CommandSpec& EvalSpec();
absl::Status RunEval(const ParsedArgs& args, Io& io);

// prism workload list | NAME [--batch B] [--json]
const CommandSpec& WorkloadSpec();
absl::Status RunWorkload(const ParsedArgs& args, Io& io);

// prism hw list | show NAME [--json]
const CommandSpec& HwSpec();
absl::Status RunHw(const ParsedArgs& args, Io& io);

// prism prune FAMILY.json --target NAME [--incumbent-us X] [--explain] [--dump-smt DIR] [--json]
const CommandSpec& PruneSpec();
absl::Status RunPrune(const ParsedArgs& args, Io& io);

// prism check-proof FILE [--rules DIR] [--json]
const CommandSpec& CheckProofSpec();
absl::Status RunCheckProof(const ParsedArgs& args, Io& io);

// prism rules check [--rules DIR] [--rule NAME] [--json]
const CommandSpec& RulesSpec();
absl::Status RunRules(const ParsedArgs& args, Io& io);

// prism search FILE | --workload NAME [--batch B] [--target NAME] [--budget-s S]
//   [--max-block-ops N] [--no-prune] [--top K] [--dump-after STAGE] [--json]
const CommandSpec& SearchSpec();
absl::Status RunSearch(const ParsedArgs& args, Io& io);

// prism optimize FILE | --workload NAME [--batch B] [--target NAME] [--budget-s S]
//   [--gpu N | --no-gpu] [--out DIR] [--top K] [--compile-cache DIR] [--no-fallback] [--json]
const CommandSpec& OptimizeSpec();
absl::Status RunOptimize(const ParsedArgs& args, Io& io);

// prism audit DIR [--solver z3|cvc5] [--seed S] [--sample N] [--members M] [--json]
const CommandSpec& AuditSpec();
absl::Status RunAudit(const ParsedArgs& args, Io& io);

}  // namespace prism::cli

#endif  // PRISM_TOOLS_COMMANDS_H_
