// UnionFind: dense ids, Link/Find, path compression, roots.
#include "prism/equiv/union_find.h"

#include "gtest/gtest.h"

namespace prism::equiv {
namespace {

TEST(EquivUnionFindTest, MakeSetHandsOutDenseIds) {
  UnionFind uf;
  for (uint32_t i = 0; i < 5; ++i) EXPECT_EQ(uf.MakeSet(), EClassId(i));
  EXPECT_EQ(uf.size(), 5u);
  for (uint32_t i = 0; i < 5; ++i) {
    EXPECT_EQ(uf.Find(EClassId(i)), EClassId(i));
    EXPECT_TRUE(uf.IsRoot(EClassId(i)));
  }
}

TEST(EquivUnionFindTest, LinkAndFindWithPathCompression) {
  UnionFind uf;
  for (int i = 0; i < 6; ++i) uf.MakeSet();
  // Chain 5 -> 4 -> 3 -> 2 -> 1 -> 0.
  for (uint32_t i = 5; i >= 1; --i) uf.Link(EClassId(i - 1), EClassId(i));
  EXPECT_EQ(uf.FindNoCompress(EClassId(5)), EClassId(0));
  EXPECT_EQ(uf.Find(EClassId(5)), EClassId(0));
  // After compression every node on the path points at the root.
  for (uint32_t i = 1; i < 6; ++i) EXPECT_FALSE(uf.IsRoot(EClassId(i)));
  EXPECT_TRUE(uf.IsRoot(EClassId(0)));
  for (uint32_t i = 0; i < 6; ++i) EXPECT_EQ(uf.FindNoCompress(EClassId(i)), EClassId(0));
}

TEST(EquivUnionFindTest, TableOfUnions) {
  struct Row {
    std::vector<std::pair<uint32_t, uint32_t>> links;  // (root, child) by current roots
    std::vector<std::pair<uint32_t, uint32_t>> same, different;
  };
  const std::vector<Row> rows = {
      {{}, {{0, 0}}, {{0, 1}, {2, 3}}},
      {{{0, 1}}, {{0, 1}}, {{0, 2}, {1, 3}}},
      {{{0, 1}, {2, 3}}, {{0, 1}, {2, 3}}, {{1, 3}}},
      {{{0, 1}, {2, 3}, {0, 2}}, {{1, 3}, {0, 3}}, {{0, 4}}},
  };
  for (size_t r = 0; r < rows.size(); ++r) {
    UnionFind uf;
    for (int i = 0; i < 5; ++i) uf.MakeSet();
    for (auto [a, b] : rows[r].links) uf.Link(uf.Find(EClassId(a)), uf.Find(EClassId(b)));
    for (auto [a, b] : rows[r].same) EXPECT_EQ(uf.Find(EClassId(a)), uf.Find(EClassId(b))) << "row " << r;
    for (auto [a, b] : rows[r].different) {
      EXPECT_NE(uf.Find(EClassId(a)), uf.Find(EClassId(b))) << "row " << r;
    }
  }
}

}  // namespace
}  // namespace prism::equiv
