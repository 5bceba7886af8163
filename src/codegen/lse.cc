// FindLsePairs (gen_util.h): which split-KV attention partials are stored in log-sum-exp form.
// The producer side (attention_gen.cc) stores N / Dn and log2 Dn for a pair found here, the
// reader side (pointwise_gen.cc) weights each partial by 2^(Dn'_i − max Dn'); both ask this
// function about the same program, so they always agree.
#include <algorithm>
#include <cstdint>
#include <map>
#include <vector>

#include "gen_util.h"
#include "prism/block/block_graph.h"
#include "prism/ir/program.h"

namespace prism::codegen::internal {
namespace {

// Reader `r`'s N and Dn tiles of every block and iteration were written by one producer block
// at the same rows (file comment of FindLsePairs). Decided from the maps and tile extents, in
// O(1) (a brute force over blocks and iterations would be as large as the grids, up to
// millions of blocks for the search's extreme points):
//   - the producer stores N and Dn with the same omap and the same row extents (dims 0, 1), Dn
//     one column wide, and every grid axis it has more than one block on splits some dim (no
//     replicated stores);
//   - the reader reads them with the same imap and fmap and the same row extents, Dn one
//     column, N whole producer tiles along the last dim, and row extents that divide the
//     producer's.
// Then the tile a reader block reads at iteration `it` has, along each dim, the same index in
// the producer's N and Dn tilings (rows: same origin and extents; last dim: N origin
// c·t_N over tiles of t_N, Dn origin c over tiles of 1), so one producer block wrote both, at
// the same rows.
bool Paired(const ConcreteBlockGraph& prod, const LsePair& pair, const ConcreteBlockGraph& rk,
            const LsePair::Reader& r) {
  const ConcreteBlockOp& on = prod.ops[pair.num_out];
  const ConcreteBlockOp& od = prod.ops[pair.den_out];
  const ConcreteBlockOp& in = rk.ops[r.num_in];
  const ConcreteBlockOp& id = rk.ops[r.den_in];
  if (on.map != od.map || in.map != id.map || in.fmap != id.fmap) return false;
  for (int axis = 0; axis < kNumGridAxes; ++axis) {
    if (prod.grid[axis] > 1 && on.map[axis] == static_cast<int>(kReplicate)) return false;
  }
  for (int d = 0; d < 2; ++d) {
    if (on.tile[d] != od.tile[d] || in.tile[d] != id.tile[d] || on.tile[d] % in.tile[d] != 0) {
      return false;
    }
  }
  return od.tile[2] == 1 && id.tile[2] == 1 && in.tile[2] == on.tile[2];
}

// Reader `kernel`'s pattern for the pair: Σ_it N / Σ_it Dn (FindLsePairs).
bool MatchReader(const BlockProgram& p, int kernel, LsePair& pair) {
  const ConcreteBlockGraph& k = p.kernels[kernel].block();
  if (ChooseTemplate(k) != Template::kPointwise) return false;
  LsePair::Reader r;
  r.kernel = kernel;
  for (int i = 0; i < static_cast<int>(k.ops.size()); ++i) {
    const ConcreteBlockOp& op = k.ops[i];
    if (op.kind == BlockOpKind::kOutput &&
        (op.tensor == pair.num_tensor || op.tensor == pair.den_tensor)) {
      return false;
    }
    if (op.kind != BlockOpKind::kInput) continue;
    if (op.tensor == pair.num_tensor) {
      if (r.num_in != -1) return false;  // read twice
      r.num_in = i;
    } else if (op.tensor == pair.den_tensor) {
      if (r.den_in != -1) return false;
      r.den_in = i;
    }
  }
  if (r.num_in < 0 || r.den_in < 0) return false;
  const std::vector<int> uses = UseCounts(k);
  // The single user of op `x`, or -1.
  auto user = [&](int x) {
    if (uses[x] != 1) return -1;
    for (int i = 0; i < static_cast<int>(k.ops.size()); ++i) {
      const auto& ops = k.ops[i].operands;
      if (std::find(ops.begin(), ops.end(), x) != ops.end()) return i;
    }
    return -1;
  };
  r.num_acc = user(r.num_in);
  r.den_acc = user(r.den_in);
  if (r.num_acc < 0 || r.den_acc < 0 || k.ops[r.num_acc].kind != BlockOpKind::kAccSum ||
      k.ops[r.den_acc].kind != BlockOpKind::kAccSum) {
    return false;
  }
  r.div = user(r.num_acc);
  if (r.div < 0 || r.div != user(r.den_acc)) return false;
  const ConcreteBlockOp& div = k.ops[r.div];
  if (div.kind != BlockOpKind::kBinary || div.fn != OpKind::kDiv ||
      div.operands != std::vector<int>{r.num_acc, r.den_acc}) {
    return false;
  }
  const ConcreteBlockOp& n = k.ops[r.num_in];
  const ConcreteBlockOp& d = k.ops[r.den_in];
  if (n.phase != Phase::kLoop || d.phase != Phase::kLoop || n.tile.size() != 3 ||
      d.tile.size() != 3 || d.tile[2] != 1 || n.tile[0] != d.tile[0] || n.tile[1] != d.tile[1]) {
    return false;
  }
  if (!Paired(p.kernels[pair.producer].block(), pair, k, r)) return false;
  pair.readers.push_back(r);
  return true;
}

}  // namespace

std::vector<LsePair> FindLsePairs(const BlockProgram& p) {
  std::vector<LsePair> out;
  // How many output ops (in all kernels) store each tensor.
  std::map<int, int> writers;
  for (const ConcreteKernel& ck : p.kernels) {
    if (!ck.is_block()) continue;
    for (const ConcreteBlockOp& op : ck.block().ops) {
      if (op.kind == BlockOpKind::kOutput) ++writers[op.tensor];
    }
  }
  for (int kp = 0; kp < static_cast<int>(p.kernels.size()); ++kp) {
    if (!p.kernels[kp].is_block()) continue;
    const ConcreteBlockGraph& k = p.kernels[kp].block();
    if (ChooseTemplate(k) != Template::kAttention) continue;
    LsePair pair;
    pair.producer = kp;
    bool ok = true;
    for (int i = 0; i < static_cast<int>(k.ops.size()) && ok; ++i) {
      const ConcreteBlockOp& op = k.ops[i];
      if (op.kind != BlockOpKind::kOutput) continue;
      const BlockOpKind acc = k.ops[op.operands[0]].kind;
      if (acc == BlockOpKind::kAccSum) {
        ok = pair.num_out == -1;  // else stored twice
        pair.num_out = i;
      } else if (acc == BlockOpKind::kAccSumLast) {
        ok = pair.den_out == -1;
        pair.den_out = i;
      } else {
        ok = false;
      }
    }
    if (!ok || pair.num_out < 0 || pair.den_out < 0) continue;
    pair.num_tensor = k.ops[pair.num_out].tensor;
    pair.den_tensor = k.ops[pair.den_out].tensor;
    const ConcreteTensor& nt = p.tensors[pair.num_tensor];
    const ConcreteTensor& dt = p.tensors[pair.den_tensor];
    const Shape& ntile = k.ops[pair.num_out].tile;
    const Shape& dtile = k.ops[pair.den_out].tile;
    if (pair.num_tensor == pair.den_tensor || dt.dtype != DType::kF32 || nt.shape.size() != 3 ||
        dt.shape.size() != 3 || ntile.size() != 3 || dtile.size() != 3 || dtile[2] != 1 ||
        ntile[0] != dtile[0] || ntile[1] != dtile[1] || writers[pair.num_tensor] != 1 ||
        writers[pair.den_tensor] != 1) {
      continue;
    }
    if (std::count(p.outputs.begin(), p.outputs.end(), pair.num_tensor) > 0 ||
        std::count(p.outputs.begin(), p.outputs.end(), pair.den_tensor) > 0) {
      continue;
    }
    for (int kr = 0; kr < static_cast<int>(p.kernels.size()) && ok; ++kr) {
      if (kr == kp) continue;
      bool reads = false;
      if (p.kernels[kr].is_block()) {
        for (const ConcreteBlockOp& op : p.kernels[kr].block().ops) {
          reads |= op.kind == BlockOpKind::kInput &&
                   (op.tensor == pair.num_tensor || op.tensor == pair.den_tensor);
        }
      } else {
        // A library kernel (concat) copies the stored values as they are: it must see N and Dn.
        for (int t : p.kernels[kr].library().operands) {
          reads |= t == pair.num_tensor || t == pair.den_tensor;
        }
      }
      if (reads && (!p.kernels[kr].is_block() || !MatchReader(p, kr, pair))) ok = false;
    }
    // The producer itself reading its outputs back is not a form the generator makes; an
    // attention kernel has no such input (attention_gen.cc).
    if (ok && !pair.readers.empty()) out.push_back(std::move(pair));
  }
  return out;
}

}  // namespace prism::codegen::internal
