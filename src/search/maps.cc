// search/: Map constraints of a structure and map resolution (imap/omap/fmap choices). (searcher.h)
#include "searcher.h"

namespace prism::search::internal {

std::vector<Searcher::DimClass> Searcher::MapConstraints(const std::vector<GenOp>& ops) const {
  std::vector<int> parent;
  std::vector<uint8_t> no_grid, no_loop;
  const auto fresh = [&] {
    parent.push_back(static_cast<int>(parent.size()));
    no_grid.push_back(0);
    no_loop.push_back(0);
    return static_cast<int>(parent.size()) - 1;
  };
  const std::function<int(int)> find = [&](int x) {
    while (parent[x] != x) x = parent[x] = parent[parent[x]];
    return x;
  };
  const auto unite = [&](int a, int b) { parent[find(a)] = find(b); };
  struct Dims {
    std::vector<int> slot;
    std::vector<int64_t> size;
  };
  std::vector<Dims> v;
  std::map<int, std::pair<int, int>> slot_to_input;
  // Aligns a's and b's dims from the right, all but the `skip` trailing ones, unifying equal
  // extents > 1; returns the aligned result dims (b's where a lacks one or has extent 1).
  const auto align = [&](const Dims& a, const Dims& b, size_t skip) {
    const size_t ra = a.size.size() - skip, rb = b.size.size() - skip;
    const size_t r = std::max(ra, rb);
    Dims out;
    for (size_t k = 0; k < r; ++k) {
      const bool ha = k + ra >= r, hb = k + rb >= r;
      const size_t ia = k + ra - r, ib = k + rb - r;
      if (ha && hb && a.size[ia] == b.size[ib] && a.size[ia] > 1) unite(a.slot[ia], b.slot[ib]);
      const bool take_a = ha && (!hb || a.size[ia] > 1);
      out.slot.push_back(take_a ? a.slot[ia] : b.slot[ib]);
      out.size.push_back(take_a ? a.size[ia] : b.size[ib]);
    }
    return out;
  };
  for (const GenOp& op : ops) {
    Dims d;
    switch (op.kind) {
      case BlockOpKind::kInput: {
        const Shape& s = program_.node(program_.inputs()[static_cast<size_t>(op.count)]).shape;
        for (size_t k = 0; k < s.size(); ++k) {
          d.slot.push_back(fresh());
          d.size.push_back(s[k]);
          slot_to_input[d.slot.back()] = {static_cast<int>(op.count), static_cast<int>(k)};
        }
        break;
      }
      case BlockOpKind::kMatMul: {
        const Dims& a = v[op.a];
        const Dims& b = v[op.b];
        const size_t ra = a.size.size(), rb = b.size.size();
        if (a.size[ra - 1] == b.size[rb - 2] && a.size[ra - 1] > 1) {
          unite(a.slot[ra - 1], b.slot[rb - 2]);
        }
        no_grid[a.slot[ra - 1]] = no_grid[b.slot[rb - 2]] = 1;
        d = align(a, b, 2);
        d.slot.push_back(a.slot[ra - 2]);
        d.size.push_back(a.size[ra - 2]);
        d.slot.push_back(b.slot[rb - 1]);
        d.size.push_back(b.size[rb - 1]);
        break;
      }
      case BlockOpKind::kBinary: d = align(v[op.a], v[op.b], 0); break;
      case BlockOpKind::kRms:
        d = v[op.a];
        no_grid[d.slot.back()] = no_loop[d.slot.back()] = 1;
        break;
      case BlockOpKind::kAccSum:
        d = v[op.a];
        for (int sl : d.slot) no_loop[sl] = 1;
        break;
      case BlockOpKind::kReduce:
      case BlockOpKind::kAccSumLast:
      case BlockOpKind::kAccSumSqLast:
      case BlockOpKind::kAccMaxLast:
        d = v[op.a];
        if (op.kind != BlockOpKind::kReduce) {
          for (size_t k = 0; k + 1 < d.slot.size(); ++k) no_loop[d.slot[k]] = 1;
        }
        no_grid[d.slot.back()] = 1;
        d.slot.back() = fresh();
        d.size.back() = 1;
        break;
      default: d = v[op.a]; break;  // unary, inv_rms: the operand's tile dims
    }
    v.push_back(std::move(d));
  }
  std::map<int, DimClass> classes;
  for (size_t sl = 0; sl < parent.size(); ++sl) {
    DimClass& c = classes[find(static_cast<int>(sl))];
    c.no_grid = c.no_grid || no_grid[sl];
    c.no_loop = c.no_loop || no_loop[sl];
    auto it = slot_to_input.find(static_cast<int>(sl));
    if (it != slot_to_input.end()) c.members.push_back(it->second);
  }
  const Dims& out = v.back();
  for (size_t k = 0; k < out.slot.size(); ++k) classes[find(out.slot[k])].output_dim = static_cast<int64_t>(k);
  std::vector<DimClass> result;
  for (auto& [root, c] : classes) {
    if (!c.members.empty()) result.push_back(std::move(c));
  }
  return result;
}

absl::Status Searcher::ResolveMaps(const std::vector<GenOp>& ops,
                                   const std::vector<Value>& values) {
  const size_t inputs = program_.inputs().size();
  ++result_.funnel.structures;
  if (config_.map_prefilter) {
    equal_ = MapConstraints(ops);
  } else {
    equal_.clear();
  }
  const Shape& out_shape = program_.node(program_.outputs()[0].tensor).shape;
  const int64_t out_rank = static_cast<int64_t>(out_shape.size());
  const int max_axes = std::min<int>(config_.max_grid_dims, static_cast<int>(out_rank));
  Maps m;
  m.imap.assign(inputs, {kR, kR, kR});
  m.fmap.assign(inputs, kR);
  // Axes 0..max_axes, each on a distinct output dim, in increasing dim order.
  std::function<absl::Status(int, int64_t)> choose_omap = [&](int axis, int64_t from) -> absl::Status {
    m.axes = axis;
    PRISM_RETURN_IF_ERROR(AssignInput(ops, values, m, 0));
    if (axis == max_axes || result_.budget_exhausted) return absl::OkStatus();
    for (int64_t d = from; d < out_rank; ++d) {
      if (out_shape[d] < 2) continue;  // nothing to split
      m.omap[axis] = d;
      PRISM_RETURN_IF_ERROR(choose_omap(axis + 1, d + 1));
      m.omap[axis] = kR;
      m.axes = axis;
      if (result_.budget_exhausted) break;
    }
    return absl::OkStatus();
  };
  return choose_omap(0, 0);
}

bool Searcher::ConsistentSoFar(const Maps& m, size_t last) const {
  for (const DimClass& c : equal_) {
    int want_grid = -1;
    if (c.output_dim != kR) {
      want_grid = 0;
      for (int a = 0; a < m.axes; ++a) want_grid |= m.omap[a] == c.output_dim ? (1 << a) : 0;
    } else if (c.no_grid) {
      want_grid = 0;
    }
    int want_loop = c.output_dim != kR || c.no_loop ? 0 : -1;
    for (const auto& [i, d] : c.members) {
      if (static_cast<size_t>(i) > last) continue;
      int grid = 0;
      for (int a = 0; a < m.axes; ++a) grid |= m.imap[i][a] == d ? (1 << a) : 0;
      const int loop = m.fmap[i] == d ? 1 : 0;
      if (want_grid < 0) want_grid = grid;
      if (want_loop < 0) want_loop = loop;
      if (grid != want_grid || loop != want_loop) return false;
    }
  }
  return true;
}

absl::Status Searcher::AssignInput(const std::vector<GenOp>& ops, const std::vector<Value>& values,
                                   Maps& m, size_t i) {
  const size_t inputs = program_.inputs().size();
  if (i == inputs) return TryMaps(ops, values, m);
  if (absl::Now() > deadline_) {
    result_.budget_exhausted = true;
    return absl::OkStatus();
  }
  const int64_t rank = static_cast<int64_t>(program_.node(program_.inputs()[i]).shape.size());
  std::function<absl::Status(int)> axis_choice = [&](int a) -> absl::Status {
    if (a == m.axes) {
      for (int64_t f = kR; f < rank; ++f) {
        m.fmap[i] = f;
        if (ConsistentSoFar(m, i)) PRISM_RETURN_IF_ERROR(AssignInput(ops, values, m, i + 1));
        if (result_.budget_exhausted) break;
      }
      m.fmap[i] = kR;
      return absl::OkStatus();
    }
    for (int64_t d = kR; d < rank; ++d) {
      bool taken = false;
      for (int b = 0; b < a; ++b) taken = taken || (d != kR && m.imap[i][b] == d);
      if (taken) continue;
      m.imap[i][a] = d;
      PRISM_RETURN_IF_ERROR(axis_choice(a + 1));
      if (result_.budget_exhausted) break;
    }
    m.imap[i][a] = kR;
    return absl::OkStatus();
  };
  return axis_choice(0);
}

}  // namespace prism::search::internal
