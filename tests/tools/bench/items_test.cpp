// bench= items: parsing, suites narrowed for variations, packing into the
// kernel's 255-character / 32-item bench= limit.
#include "pvk/bench/items.hpp"

#include <gtest/gtest.h>

namespace pvk::bench {
namespace {

TEST(Items, ParseAndFormat) {
  const Item item = parse_item("fork_dirty:pages=1280+12800:reps=3");
  EXPECT_EQ(item.name, "fork_dirty");
  ASSERT_EQ(item.options.size(), 2u);
  EXPECT_EQ(item.options[0], (std::pair<std::string, std::string>{"pages", "1280+12800"}));
  EXPECT_EQ(item.options[1], (std::pair<std::string, std::string>{"reps", "3"}));
  EXPECT_EQ(item.text(), "fork_dirty:pages=1280+12800:reps=3");
  EXPECT_EQ(parse_item("getpid").text(), "getpid");
}

TEST(Items, ParseList) {
  const auto items = parse_items("getpid,ctx:procs=2,,seed001");
  ASSERT_EQ(items.size(), 3u);
  EXPECT_EQ(join_items(items), "getpid,ctx:procs=2,seed001");
  EXPECT_TRUE(parse_items("").empty());
}

TEST(Items, Malformed) {
  EXPECT_THROW(parse_item(""), std::invalid_argument);
  EXPECT_THROW(parse_item(":pages=1"), std::invalid_argument);
  EXPECT_THROW(parse_item("getpid:iters"), std::invalid_argument);
  EXPECT_THROW(parse_item("getpid:=5"), std::invalid_argument);
  EXPECT_THROW(parse_item("getpid:iters="), std::invalid_argument);
  EXPECT_THROW(parse_item("a,b"), std::invalid_argument);
}

TEST(Items, RestrictToSuite) {
  const auto items = parse_items("all:reps=2:pages=64,getpid,fault_write:pages=16,seed001,seed002,smoke");
  const auto s1 = restrict_to_suite(items, "seed001");
  // "all" narrowed (pages applies to seed001 members), fault_write, seed001 itself.
  EXPECT_EQ(join_items(s1), "seed001:reps=2:pages=64,fault_write:pages=16,seed001");
  // seed000 has no member with pages: the option is dropped, reps stays.
  EXPECT_EQ(join_items(restrict_to_suite(items, "seed000")), "seed000:reps=2,getpid");
  EXPECT_TRUE(restrict_to_suite(parse_items("smoke,mprotect"), "seed000").empty());
}

TEST(Items, RestrictToBenchmarks) {
  const std::vector<std::string> names{"fork_dirty", "mprotect"};
  // A suite becomes the named members it has, each with the options it takes.
  EXPECT_EQ(join_items(restrict_to_benches(parse_items("all"), names)), "fork_dirty,mprotect");
  EXPECT_EQ(join_items(restrict_to_benches(parse_items("all:reps=2:pages=64:iters=9"), names)),
            "fork_dirty:reps=2:pages=64,mprotect:reps=2:pages=64");
  EXPECT_EQ(join_items(restrict_to_benches(parse_items("seed002:loops=3"), names)), "mprotect:loops=3");
  // Named items stay as they are; others and smoke go.
  EXPECT_EQ(join_items(restrict_to_benches(parse_items("getpid,fork_dirty:pages=128000:reps=1,smoke,seed000"), names)),
            "fork_dirty:pages=128000:reps=1");
}

TEST(Items, PackKeepsOrderWithinLimits) {
  std::vector<Item> items;
  for (int i = 0; i < 40; ++i) items.push_back(Item{"getpid", {{"iters", std::to_string(1000 + i)}}});
  const auto values = pack_items(items);
  ASSERT_GE(values.size(), 2u);
  std::vector<Item> back;
  for (const auto& v : values) {
    EXPECT_LE(v.size(), max_bench_chars);
    const auto part = parse_items(v);
    EXPECT_LE(part.size(), max_bench_items);
    back.insert(back.end(), part.begin(), part.end());
  }
  EXPECT_EQ(join_items(back), join_items(items));
}

TEST(Items, PackItemLimit) {
  std::vector<Item> items(33, Item{"getpid", {}});
  const auto values = pack_items(items);
  ASSERT_EQ(values.size(), 2u);
  EXPECT_EQ(parse_items(values[0]).size(), 32u);
  EXPECT_EQ(parse_items(values[1]).size(), 1u);
}

TEST(Items, PackExactlyAtTheCharacterLimit) {
  // Two items of 127 characters joined by ',' are exactly 255.
  const Item a{"getpid", {{"iters", std::string(127 - 13, '1')}}};
  ASSERT_EQ(a.text().size(), 127u);
  EXPECT_EQ(pack_items({a, a}).size(), 1u);
  const Item b{"getpid", {{"iters", std::string(128 - 13, '1')}}};
  EXPECT_EQ(pack_items({a, b}).size(), 2u);
  EXPECT_THROW(pack_items({Item{"getpid", {{"iters", std::string(300, '1')}}}}), std::invalid_argument);
}

}  // namespace
}  // namespace pvk::bench
