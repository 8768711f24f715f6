// Tests for FlatIndex and HashString (include/headroom/util/flat_index.h): the index behind State's paths,
// the build log and the memory history.
#include "headroom/util/flat_index.h"

#include <gtest/gtest.h>

#include <deque>
#include <set>
#include <string>

namespace headroom {
namespace {

struct Item {
  std::string key;
};
struct ItemKey {
  std::string_view operator()(const Item& item) const { return item.key; }
};
using Index = FlatIndex<Item, ItemKey>;

TEST(FlatIndex, FindsEveryInsertedKeyAcrossGrowth) {
  std::deque<Item> items;
  Index index;
  for (int i = 0; i < 5000; ++i) {
    index.Insert(&items.emplace_back(Item{"obj/dir" + std::to_string(i % 7) + "/f" + std::to_string(i) + ".o"}));
  }
  EXPECT_EQ(5000u, index.size());
  for (const Item& item : items) EXPECT_EQ(&item, index.Find(item.key));
  EXPECT_EQ(nullptr, index.Find("obj/dir0/f5000.o"));
  EXPECT_EQ(nullptr, index.Find(""));
}

TEST(FlatIndex, ReserveThenInsertWithAPrecomputedHash) {
  std::deque<Item> items;
  Index index;
  index.Reserve(3000);
  for (int i = 0; i < 3000; ++i) {
    Item* item = &items.emplace_back(Item{"k" + std::to_string(i)});
    const uint64_t hash = HashString(item->key);
    ASSERT_EQ(nullptr, index.Find(item->key, hash));
    index.Insert(item, hash);
  }
  std::set<const Item*> seen;
  index.ForEach([&](const Item* item) { seen.insert(item); });
  EXPECT_EQ(3000u, seen.size());
  EXPECT_EQ(&items[1234], index.Find("k1234"));
}

TEST(FlatIndex, ClearForgetsEverything) {
  Item a{"a"}, b{"b"};
  Index index;
  EXPECT_EQ(nullptr, index.Find("a"));  // an empty index has no table at all
  index.Insert(&a);
  index.Clear();
  EXPECT_EQ(0u, index.size());
  EXPECT_EQ(nullptr, index.Find("a"));
  index.Insert(&b);
  EXPECT_EQ(&b, index.Find("b"));
}

TEST(HashString, EveryByteAndTheLengthCount) {
  EXPECT_NE(HashString("obj/a/b/c/d/e/f.o"), HashString("obj/a/b/c/d/e/g.o"));
  EXPECT_NE(HashString("a"), HashString(std::string_view("a\0", 2)));
  EXPECT_NE(HashString(""), HashString(std::string_view("\0", 1)));
  EXPECT_EQ(HashString("same"), HashString(std::string("same")));
}

}  // namespace
}  // namespace headroom
