// Tests of smt/solver.h: verdicts and reasons, unsat cores as labels, models, push/pop
// lifetimes, definitions, budgets, statistics, theory parsing, floor semantics, compiled
// evaluation against Z3's simplifier, and SMT-LIB2 dumps re-checked by the `z3` command.
#include "prism/smt/solver.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "prism/base/check.h"
#include "prism/base/rng.h"
#include "testing/status_matchers.h"

namespace prism::smt {
namespace {

using ::prism::testing::IsOk;
using ::prism::testing::StatusIs;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

Term Sym(Solver& s, absl::string_view name, SortKind sort = SortKind::kInt) {
  absl::StatusOr<Term> t = s.Symbol(name, sort);
  PRISM_CHECK(t.ok(), t.status().ToString());
  return *t;
}

// Runs `z3 -smt2 FILE` and returns its stdout, or nullopt if the z3 binary is absent.
std::optional<std::string> RunZ3(const std::string& script) {
  if (std::system("command -v z3 > /dev/null 2>&1") != 0) return std::nullopt;
  const std::string path =
      absl::StrCat(::testing::TempDir(), "/prism_smt_", ::testing::UnitTest::GetInstance()
                                                             ->current_test_info()
                                                             ->name(),
                   "_", std::hash<std::string>()(script), ".smt2");
  {
    std::ofstream out(path);
    out << script;
  }
  std::string output;
  FILE* pipe = popen(absl::StrCat("z3 -smt2 ", path, " 2>&1").c_str(), "r");
  if (pipe == nullptr) return std::nullopt;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), pipe)) > 0) output.append(buf, n);
  pclose(pipe);
  std::filesystem::remove(path);
  return output;
}

TEST(SolverTest, VerdictTable) {
  struct Row {
    const char* what;
    int lo, hi;           // x in [lo, hi]
    int at_least;         // tracked "floor": x >= at_least
    int at_most;          // tracked "ceiling": x <= at_most
    Verdict verdict;
    std::vector<std::string> core;
  };
  const std::vector<Row> rows = {
      {"room", 0, 10, 2, 8, Verdict::kRefuted, {}},
      {"floor above domain", 0, 10, 11, 20, Verdict::kProved, {"floor"}},
      {"ceiling below domain", 5, 10, 0, 4, Verdict::kProved, {"ceiling"}},
      {"floor above ceiling", 0, 10, 7, 6, Verdict::kProved, {"ceiling", "floor"}},
      {"exact point", 3, 3, 3, 3, Verdict::kRefuted, {}},
  };
  Solver s;
  const Term x = Sym(s, "x");
  for (const Row& r : rows) {
    SCOPED_TRACE(r.what);
    s.Push();
    ASSERT_OK(s.Declare(x));
    ASSERT_OK(s.Assert(s.And({s.Le(s.Int(r.lo), x), s.Le(x, s.Int(r.hi))})));
    ASSERT_OK(s.AssertTracked("floor", s.Ge(x, s.Int(r.at_least))));
    ASSERT_OK(s.AssertTracked("ceiling", s.Le(x, s.Int(r.at_most))));
    const CheckResult c = s.Check("table", Budget{});
    EXPECT_EQ(c.verdict, r.verdict) << c.reason;
    EXPECT_EQ(c.core, r.core);
    if (r.verdict == Verdict::kRefuted) {
      ASSERT_TRUE(c.model.contains("x"));
      const int64_t v = c.model.at("x");
      EXPECT_GE(v, std::max(r.lo, r.at_least));
      EXPECT_LE(v, std::min(r.hi, r.at_most));
      EXPECT_EQ(c.reason, "sat");
    } else {
      EXPECT_THAT(c.reason, HasSubstr("unsat; core: "));
    }
    s.Pop();
  }
  EXPECT_EQ(s.stats().by_name.at("table").queries, 5);
  EXPECT_EQ(s.stats().by_name.at("table").proved, 3);
  EXPECT_EQ(s.stats().by_name.at("table").refuted, 2);
}

TEST(SolverTest, DefinitionsAreExpandedAndScoped) {
  Solver s;
  const Term f = Sym(s, "F");
  const Term smem = Sym(s, "smem_bytes");
  s.Push();
  ASSERT_OK(s.Declare(f));
  ASSERT_OK(s.Define(smem, s.Mul({s.Int(512), f}), "bytes of shared memory"));
  EXPECT_TRUE(s.IsBound("smem_bytes"));
  ASSERT_OK(s.Assert(s.And({s.Ge(f, s.Int(1)), s.Le(f, s.Int(1024))})));
  ASSERT_OK(s.AssertTracked("smem_capacity", s.Le(smem, s.Int(4096))));
  CheckResult c = s.Check("defs", Budget{});
  ASSERT_EQ(c.verdict, Verdict::kRefuted);
  EXPECT_LE(c.model.at("F") * 512, 4096);
  EXPECT_FALSE(c.model.contains("smem_bytes"));  // defined, not a free symbol
  // Binding twice in one scope is an error; so is using an unbound symbol.
  EXPECT_THAT(s.Declare(f), StatusIs(absl::StatusCode::kInvalidArgument,
                                     "symbol 'F' is already bound"));
  const Term g = Sym(s, "G");
  EXPECT_THAT(s.Assert(s.Le(g, s.Int(3))),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "assertion uses 'G', which is not bound in scope"));
  const Term regs = Sym(s, "regs");
  EXPECT_THAT(s.Define(regs, s.Add({g, s.Int(1)})),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "definition of 'regs' uses 'G', which is not bound in scope"));
  EXPECT_THAT(s.Define(regs, s.Bool(true)),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "definition of 'regs' has sort Bool, expected Int"));
  s.Pop();
  EXPECT_FALSE(s.IsBound("F"));
  // After Pop the symbol can be bound again, to something else.
  s.Push();
  const Term f2 = Sym(s, "F");
  ASSERT_OK(s.Declare(f2));
  ASSERT_OK(s.AssertTracked("smem_capacity", s.Le(f2, s.Int(-1))));
  ASSERT_OK(s.Assert(s.Ge(f2, s.Int(0))));
  EXPECT_EQ(s.Check("defs", Budget{}).verdict, Verdict::kProved);
  s.Pop();
}

TEST(SolverTest, SymbolAndLabelErrors) {
  Solver s;
  EXPECT_THAT(s.Symbol("1x", SortKind::kInt),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "'1x' is not an SMT-LIB simple symbol"));
  ASSERT_OK(s.Symbol("x", SortKind::kInt).status());
  EXPECT_THAT(s.Symbol("x", SortKind::kReal),
              StatusIs(absl::StatusCode::kInvalidArgument, "symbol 'x' has sort Int, not Real"));
  s.Push();
  ASSERT_OK(s.Declare(Sym(s, "x")));
  EXPECT_THAT(s.AssertTracked("x", s.Bool(true)),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "label 'x' is already the name of a symbol"));
  ASSERT_OK(s.AssertTracked("r", s.Bool(true)));
  EXPECT_THAT(s.AssertTracked("r", s.Bool(true)),
              StatusIs(absl::StatusCode::kInvalidArgument, "label 'r' is already in use"));
  EXPECT_THAT(s.AssertTracked("a b", s.Bool(true)),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "label 'a b' is not an SMT-LIB simple symbol"));
  s.Pop();
}

TEST(SolverTest, ZeroAndTinyBudgetsAnswerUnknown) {
  Solver s;
  const Term x = Sym(s, "x");
  const Term y = Sym(s, "y");
  s.Push();
  ASSERT_OK(s.Declare(x));
  ASSERT_OK(s.Declare(y));
  // Factoring a semiprime: hard enough that a tiny rlimit runs out.
  ASSERT_OK(s.Assert(s.And({s.Eq(s.Mul({x, y}), s.Int(int64_t{1000003} * 1000033)),
                            s.Gt(x, s.Int(1)), s.Gt(y, s.Int(1))})));
  CheckResult zero = s.Check("hard", Budget::Zero());
  EXPECT_EQ(zero.verdict, Verdict::kUnknown);
  EXPECT_EQ(zero.reason, "zero budget");
  EXPECT_EQ(zero.stats.rlimit_used, 0);
  CheckResult tiny = s.Check("hard", Budget{1000, 2000});
  EXPECT_EQ(tiny.verdict, Verdict::kUnknown);
  EXPECT_FALSE(tiny.reason.empty());
  EXPECT_GT(tiny.stats.rlimit_used, 0);
  s.Pop();
  EXPECT_EQ(s.stats().by_name.at("hard").unknown, 2);
  EXPECT_THAT(s.stats().ToString(), HasSubstr("hard: 2 queries (0 proved, 0 refuted, 2 unknown)"));
  SolverStats merged;
  merged.Merge(s.stats());
  merged.Merge(s.stats());
  EXPECT_EQ(merged.total.queries, 4);
}

TEST(SolverTest, FloorSemanticsOfDivAndMod) {
  // Every sign combination, with and without the positive-divisor promise where it applies.
  struct Row {
    int64_t a, b, q, m;
  };
  const std::vector<Row> rows = {
      {7, 2, 3, 1},   {-7, 2, -4, 1},  {7, -2, -4, -1}, {-7, -2, 3, -1},
      {6, 3, 2, 0},   {-6, 3, -2, 0},  {0, 5, 0, 0},    {5, 7, 0, 5},
  };
  Solver s;
  const Term a = Sym(s, "a");
  const Term b = Sym(s, "b");
  for (const Row& r : rows) {
    for (bool positive : {false, true}) {
      if (positive && r.b <= 0) continue;
      SCOPED_TRACE(absl::StrCat(r.a, " floordiv ", r.b, positive ? " (positive)" : ""));
      s.Push();
      ASSERT_OK(s.Declare(a));
      ASSERT_OK(s.Declare(b));
      ASSERT_OK(s.Assert(s.And({s.Eq(a, s.Int(r.a)), s.Eq(b, s.Int(r.b))})));
      // Prove q and m by refuting their negation.
      ASSERT_OK(s.Assert(s.Or({s.Not(s.Eq(s.FloorDiv(a, b, positive), s.Int(r.q))),
                               s.Not(s.Eq(s.Mod(a, b, positive), s.Int(r.m)))})));
      EXPECT_EQ(s.Check("floor", Budget{}).verdict, Verdict::kProved);
      s.Pop();
    }
  }
}

TEST(SolverTest, ParseDefinitions) {
  Solver s;
  ASSERT_OK(s.Symbol("hw_sms", SortKind::kInt).status());
  const std::string theory = R"(
; declared by the caller
(declare-const smem_bytes Int)
(define-fun ceil_div ((a Int) (b Int)) Int (div (+ a (- b 1)) b))

; the allocation granularity
(define-fun smem_alloc () Int (* 128 (ceil_div smem_bytes 128)))
(define-fun fits () Bool (<= (* hw_sms smem_alloc) 1000000))
)";
  ASSERT_OK_AND_ASSIGN(std::vector<ParsedDefinition> defs, s.ParseDefinitions("t.smt2", theory));
  ASSERT_EQ(defs.size(), 2u);
  EXPECT_EQ(defs[0].name, "smem_alloc");
  EXPECT_EQ(defs[0].sort, SortKind::kInt);
  EXPECT_THAT(defs[0].comments, ElementsAre("the allocation granularity"));
  EXPECT_EQ(defs[0].line, 7);
  EXPECT_EQ(defs[1].name, "fits");
  EXPECT_EQ(defs[1].sort, SortKind::kBool);
  // The 0-ary definition stays a symbol in the body of the next one; functions are expanded.
  EXPECT_THAT(s.ToString(defs[1].body), HasSubstr("smem_alloc"));
  EXPECT_THAT(s.ToString(defs[0].body), HasSubstr("div"));
  // Bind and check: smem_bytes = 1000 -> alloc 1024, 132 * 1024 <= 1e6.
  s.Push();
  ASSERT_OK(s.Define(Sym(s, "hw_sms"), s.Int(132)));
  ASSERT_OK(s.Define(Sym(s, "smem_bytes"), s.Int(1000)));
  for (const ParsedDefinition& d : defs) ASSERT_OK(s.Define(d.symbol, d.body));
  ASSERT_OK_AND_ASSIGN(double alloc, s.EvaluateWithZ3(defs[0].symbol, {}));
  EXPECT_EQ(alloc, 1024);
  ASSERT_OK(s.AssertTracked("fits_rule", s.Not(defs[1].symbol)));
  EXPECT_EQ(s.Check("parse", Budget{}).verdict, Verdict::kProved);
  s.Pop();

  struct Bad {
    std::string text;
    std::string message;
  };
  const std::vector<Bad> bad = {
      {"(assert true)", "bad.smt2:1: only declare-const and define-fun are allowed"},
      {"\n(define-fun x () Int (+ y 1))", "bad.smt2:2: in 'x': "},
      {"(define-fun x () Int true)", "bad.smt2:1: in 'x': "},
      {"(define-fun x () Array 1)", "bad.smt2:1: 'x' must have sort Int, Real or Bool"},
      {"(declare-const hw_sms Real)", "bad.smt2:1: symbol 'hw_sms' has sort Int, not Real"},
      {"(define-fun x () Int 1", "bad.smt2:1: unbalanced '('"},
  };
  for (const Bad& b : bad) {
    EXPECT_THAT(s.ParseDefinitions("bad.smt2", b.text),
                StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr(b.message)))
        << b.text;
  }
}

TEST(SolverTest, CompiledTermsAgreeWithZ3) {
  Solver s;
  const Term x = Sym(s, "x");
  const Term y = Sym(s, "y");
  const Term half = s.Real(1, 2);
  // A mix of every operator the theories use.
  const std::vector<Term> terms = {
      s.FloorDiv(x, y),
      s.Mod(x, y),
      s.FloorDiv(x, y, /*divisor_positive=*/false),
      s.Add({s.Mul({x, y}), s.Int(-3), s.Neg(y)}),
      s.Max(s.Min(x, y), s.Int(2)),
      s.RealDiv(s.ToReal(x), s.Add({s.ToReal(y), half})),
      s.Ite(s.Lt(x, y), s.Sub(y, x), s.Sub(x, y)),
  };
  const std::vector<Term> formulas = {
      s.And({s.Le(x, y), s.Not(s.Eq(x, s.Int(0)))}),
      s.Or({s.Gt(x, s.Int(3)), s.Implies(s.Ge(y, s.Int(0)), s.Lt(s.ToReal(x), half))}),
  };
  Rng rng(7);
  for (int trial = 0; trial < 200; ++trial) {
    const int64_t vx = rng.UniformInt(-50, 50);
    int64_t vy = rng.UniformInt(-50, 50);
    if (vy == 0) vy = 3;
    s.Push();
    ASSERT_OK(s.Declare(x));
    ASSERT_OK(s.Declare(y));
    for (Term t : terms) {
      ASSERT_OK_AND_ASSIGN(CompiledTerm c, s.Compile(t, {"x", "y"}));
      ASSERT_OK_AND_ASSIGN(double fast, c.EvaluateNumber({vx, vy}));
      ASSERT_OK_AND_ASSIGN(double slow, s.EvaluateWithZ3(t, {{"x", vx}, {"y", vy}}));
      EXPECT_NEAR(fast, slow, 1e-9) << s.ToString(t) << " at x=" << vx << " y=" << vy;
    }
    for (Term f : formulas) {
      ASSERT_OK_AND_ASSIGN(CompiledTerm c, s.Compile(f, {"x", "y"}));
      ASSERT_OK_AND_ASSIGN(bool fast, c.EvaluateBool({vx, vy}));
      ASSERT_OK_AND_ASSIGN(double slow, s.EvaluateWithZ3(f, {{"x", vx}, {"y", vy}}));
      EXPECT_EQ(fast, slow == 1.0) << s.ToString(f);
    }
    s.Pop();
  }
  // Compile errors name the problem.
  s.Push();
  ASSERT_OK(s.Declare(x));
  EXPECT_THAT(s.Compile(s.Le(x, s.Int(1)), {}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "cannot compile: symbol 'x' is not an input"));
  ASSERT_OK_AND_ASSIGN(CompiledTerm c, s.Compile(s.FloorDiv(s.Int(1), x, true), {"x"}));
  EXPECT_THAT(c.EvaluateInt({0}), StatusIs(absl::StatusCode::kInvalidArgument,
                                           HasSubstr("division by zero")));
  EXPECT_THAT(c.EvaluateInt({0, 1}), StatusIs(absl::StatusCode::kInvalidArgument,
                                              "compiled term expects 1 inputs, got 2"));
  EXPECT_THAT(c.EvaluateBool({1}), StatusIs(absl::StatusCode::kInvalidArgument,
                                            "compiled term is not Bool"));
  s.Pop();
}

// The dump of a query, run through the z3 command, gives the same answer (and the same core
// for unsat, a model satisfying the assertions for sat).
TEST(SolverTest, DumpsAreRecheckedByTheZ3Command) {
  Solver s;
  const Term f = Sym(s, "F");
  const Term g = Sym(s, "g");
  const Term smem = Sym(s, "smem_bytes");
  const Term hw = Sym(s, "hw_smem_per_block_optin");
  ASSERT_OK(s.Define(hw, s.Int(232448), "source: CUDA C++ Programming Guide"));
  struct Row {
    int64_t smem_cap;  // tracked smem rule bound
    int64_t min_g;     // tracked grid rule
    Verdict verdict;
    std::vector<std::string> core;
  };
  const std::vector<Row> rows = {
      {232448, 1, Verdict::kRefuted, {}},
      {50, 1, Verdict::kProved, {"smem_capacity"}},
      {232448, 100000, Verdict::kProved, {"grid_limits"}},
  };
  for (const Row& r : rows) {
    s.Push();
    ASSERT_OK(s.Declare(f));
    ASSERT_OK(s.Declare(g));
    ASSERT_OK(s.Define(smem, s.Mul({s.Int(2), s.Add({s.Mul({s.Int(16), s.FloorDiv(s.Int(4096), f, true)}),
                                                     s.Mul({s.FloorDiv(s.Int(4096), f, true),
                                                            s.FloorDiv(s.Int(6144), g, true)})})})));
    std::vector<Term> f_dom, g_dom;
    for (int64_t v = 1; v <= 4096; v *= 2) f_dom.push_back(s.Eq(f, s.Int(v)));
    for (int64_t v : {1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256}) {
      g_dom.push_back(s.Eq(g, s.Int(v)));
    }
    ASSERT_OK(s.Assert(s.Or(f_dom)));
    ASSERT_OK(s.Assert(s.Or(g_dom)));
    ASSERT_OK(s.AssertTracked("smem_capacity",
                              s.And({s.Le(smem, hw), s.Le(smem, s.Int(r.smem_cap))})));
    ASSERT_OK(s.AssertTracked("grid_limits", s.Ge(s.Mul({g, s.Int(4)}), s.Int(r.min_g))));
    const CheckResult c = s.Check("dump", Budget{});
    ASSERT_EQ(c.verdict, r.verdict) << c.reason;
    EXPECT_EQ(c.core, r.core);
    const std::string script = s.ToSmtLib2("dump", c.verdict, {"header line"});
    EXPECT_THAT(script, HasSubstr("(set-option :produce-unsat-cores true)"));
    EXPECT_THAT(script, HasSubstr("; source: CUDA C++ Programming Guide\n"
                                  "(define-fun hw_smem_per_block_optin () Int 232448)"));
    EXPECT_THAT(script, HasSubstr(":named smem_capacity))"));
    EXPECT_THAT(script, HasSubstr("(define-fun smem_bytes () Int"));
    std::optional<std::string> out = RunZ3(script);
    s.Pop();
    if (!out) GTEST_SKIP() << "the z3 command is not installed";
    const std::vector<std::string> lines = absl::StrSplit(*out, '\n', absl::SkipEmpty());
    ASSERT_FALSE(lines.empty());
    if (r.verdict == Verdict::kProved) {
      EXPECT_EQ(lines[0], "unsat") << *out;
      ASSERT_GE(lines.size(), 2u) << *out;
      EXPECT_EQ(lines[1], absl::StrCat("(", absl::StrJoin(r.core, " "), ")")) << *out;
    } else {
      EXPECT_EQ(lines[0], "sat") << *out;
      EXPECT_THAT(*out, Not(HasSubstr("error"))) << *out;
    }
  }
}

// Uninterpreted functions: declaration errors, congruence, ground axioms, and dumps that
// declare them (re-checked by the z3 command).
TEST(SolverTest, UninterpretedFunctions) {
  Solver s;
  absl::StatusOr<Function> e = s.DeclareFunction("exp_", 1);
  ASSERT_OK(e.status());
  const Term x = Sym(s, "x", SortKind::kReal);
  const Term y = Sym(s, "y", SortKind::kReal);
  EXPECT_THAT(s.DeclareFunction("exp_", 1).status(),
              StatusIs(absl::StatusCode::kInvalidArgument, "function 'exp_' is already declared"));
  EXPECT_THAT(s.DeclareFunction("x", 1).status(),
              StatusIs(absl::StatusCode::kInvalidArgument, "'x' is the name of a symbol"));
  EXPECT_THAT(s.DeclareFunction("f", 0).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "function 'f' must take at least one argument, not 0"));
  EXPECT_THAT(s.DeclareFunction("a b", 1).status(),
              StatusIs(absl::StatusCode::kInvalidArgument, "'a b' is not an SMT-LIB simple symbol"));
  EXPECT_THAT(s.Symbol("exp_", SortKind::kReal).status(),
              StatusIs(absl::StatusCode::kInvalidArgument, "'exp_' is the name of a function"));
  ASSERT_OK(s.Declare(x));
  ASSERT_OK(s.Declare(y));
  const Term ex = s.Apply(*e, {x});
  const Term ey = s.Apply(*e, {y});
  struct Row {
    std::string name;
    std::vector<Term> assertions;
    Verdict verdict;
  };
  const std::vector<Row> rows = {
      // Congruence: x = y forces exp(x) = exp(y).
      {"congruence", {s.Eq(x, y), s.Not(s.Eq(ex, ey))}, Verdict::kProved},
      // Without axioms exp is arbitrary: exp(x) <= 0 is satisfiable.
      {"no_axioms", {s.Le(ex, s.Real(0))}, Verdict::kRefuted},
      // With the ground axiom exp(x) > 0 it is not.
      {"axiom", {s.Gt(ex, s.Real(0)), s.Le(ex, s.Real(0))}, Verdict::kProved},
      // exp(x + 0) is exp(x) after arithmetic normalization of the argument.
      {"normalized_argument",
       {s.Not(s.Eq(s.Apply(*e, {s.Add({x, s.Real(0)})}), ex))}, Verdict::kProved},
  };
  for (const Row& r : rows) {
    s.Push();
    for (const Term& a : r.assertions) ASSERT_OK(s.Assert(a));
    CheckOptions options;
    options.evaluate = {ex};
    const CheckResult c = s.Check(r.name, Budget{}, options);
    EXPECT_EQ(c.verdict, r.verdict) << r.name << ": " << c.reason;
    const std::string script = s.ToSmtLib2(r.name, c.verdict);
    EXPECT_THAT(script, HasSubstr("(declare-fun exp_ (Real) Real)\n")) << r.name;
    EXPECT_THAT(script, HasSubstr("(declare-const x Real)")) << r.name;
    if (c.verdict == Verdict::kRefuted) {
      ASSERT_EQ(c.evaluated.size(), 1u);
      EXPECT_TRUE(c.real_model.contains("x")) << r.name;
    }
    std::optional<std::string> out = RunZ3(script);
    s.Pop();
    if (!out) continue;
    EXPECT_EQ(std::string(absl::StripAsciiWhitespace(out->substr(0, out->find('\n')))),
              r.verdict == Verdict::kProved ? "unsat" : "sat")
        << r.name << ":\n" << script << "\n" << *out;
  }
}

// Real models and evaluated terms are decimals; non-terminating ones end in '?'.
TEST(SolverTest, RealModelsAndEvaluatedTerms) {
  Solver s;
  const Term x = Sym(s, "x", SortKind::kReal);
  ASSERT_OK(s.Declare(x));
  ASSERT_OK(s.Assert(s.Eq(s.Mul({s.Real(3), x}), s.Real(1))));
  CheckOptions options;
  options.evaluate = {s.Mul({s.Real(2), x}), s.Gt(x, s.Real(0)), s.Real(-5, 4)};
  const CheckResult c = s.Check("real_model", Budget{}, options);
  ASSERT_EQ(c.verdict, Verdict::kRefuted) << c.reason;
  EXPECT_THAT(c.real_model, ElementsAre(std::make_pair(std::string("x"), std::string("0.3333333333?"))));
  EXPECT_THAT(c.evaluated, ElementsAre("0.6666666666?", "true", "-1.25"));
  EXPECT_THAT(c.model, IsEmpty());
}

// RealFromDouble is exact.
TEST(SolverTest, RealFromDoubleIsExact) {
  Solver s;
  struct Row {
    double v;
    std::string text;
  };
  const std::vector<Row> rows = {
      {0.5, "(/ 1.0 2.0)"},        {-1.5, "(- (/ 3.0 2.0))"}, {3.0, "3.0"},
      {0.0, "0.0"},                {1024.0, "1024.0"},        {0.1, "(/ 3602879701896397.0 36028797018963968.0)"},
      {1e20, "100000000000000000000.0"},
  };
  for (const Row& r : rows) EXPECT_EQ(s.ToString(s.RealFromDouble(r.v)), r.text) << r.v;
}

// Monomials: products of sums are expanded; coefficients are rational; powers become
// repeated factors.
TEST(SolverTest, Monomials) {
  Solver s;
  const Term x = Sym(s, "x", SortKind::kReal);
  const Term y = Sym(s, "y", SortKind::kReal);
  const auto text = [&](const std::vector<Monomial>& ms) {
    std::vector<std::string> parts;
    for (const Monomial& m : ms) {
      std::vector<std::string> f;
      for (Term t : m.factors) f.push_back(s.ToString(t));
      parts.push_back(absl::StrCat(m.num, "/", m.den, "*[", absl::StrJoin(f, ","), "]"));
    }
    std::sort(parts.begin(), parts.end());
    return absl::StrJoin(parts, " + ");
  };
  struct Row {
    Term t;
    std::string expected;
  };
  const std::vector<Row> rows = {
      {s.Sub(s.Add({x, s.Mul({s.Real(2), y})}), y), "1/1*[x] + 1/1*[y]"},
      {s.Mul({s.Add({x, y}), s.Add({x, y})}), "1/1*[x,x] + 1/1*[y,y] + 2/1*[x,y]"},
      {s.Mul({s.Real(1, 3), x}), "1/3*[x]"},
      {s.Real(7, 2), "7/2*[]"},
      {s.Sub(x, x), ""},
  };
  for (const Row& r : rows) EXPECT_EQ(text(s.Monomials(r.t)), r.expected) << s.ToString(r.t);
}

// The wall clock of a Budget stops a query the rlimit would let run: x³ + y³ = z³ over the
// positive integers (unsat; Z3 cannot decide it) with an rlimit of 2·10⁹ answers unknown by its
// 200 ms timeout, where without one it runs for minutes (the z3 command line with -T:8 ran
// out of its 8 s). The default Budget has a wall clock (5 s; 2026-12-05: a pruning query had run
// 250 s under the rlimit alone).
TEST(SolverTest, TheWallClockStopsAQueryTheRlimitWouldNot) {
  EXPECT_EQ(Budget{}.timeout_ms, 5000);
  Solver s;
  const Term x = Sym(s, "x"), y = Sym(s, "y"), z = Sym(s, "z");
  ASSERT_OK(s.Declare(x));
  ASSERT_OK(s.Declare(y));
  ASSERT_OK(s.Declare(z));
  for (Term v : {x, y, z}) ASSERT_OK(s.Assert(s.Gt(v, s.Int(0))));
  ASSERT_OK(s.AssertTracked(
      "fermat3", s.Eq(s.Add({s.Mul({x, x, x}), s.Mul({y, y, y})}), s.Mul({z, z, z}))));
  const CheckResult c = s.Check("fermat", Budget{200, 2'000'000'000});
  EXPECT_EQ(c.verdict, Verdict::kUnknown) << c.reason;
  EXPECT_LT(c.stats.seconds, 5.0);
}

}  // namespace
}  // namespace prism::smt
