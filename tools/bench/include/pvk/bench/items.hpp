// Benchmark items, as bench= takes them (docs/benchmarks.md, "Items"):
// NAME[:key=value[:key=value]], values may be lists v1+v2+v3, items joined
// with ','. The kernel takes at most 255 characters and 32 items per boot.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace pvk::bench {

struct Item {
  std::string name;                                          // benchmark or suite
  std::vector<std::pair<std::string, std::string>> options;  // in the item's order
  std::string text() const;                                  // "name:k=v:k=v"
};

inline constexpr size_t max_bench_chars = 255;  // BootParams::bench is char[256]
inline constexpr size_t max_bench_items = 32;   // the kernel's argv for the driver

// Throws std::invalid_argument for an empty name, an option without '=' or
// with an empty key or value, or a ',' inside an item.
Item parse_item(std::string_view text);
// A comma-separated list (empty entries are ignored).
std::vector<Item> parse_items(std::string_view list);
std::string join_items(const std::vector<Item>& items);

// The part of `items` that runs benchmarks of `suite`: benchmarks of the
// suite, the suite itself, and "all" narrowed to the suite (keeping only the
// options some member of the suite takes). "smoke" and unknown names yield
// nothing.
std::vector<Item> restrict_to_suite(const std::vector<Item>& items, std::string_view suite);

// The part of `items` that runs the benchmarks `names`: items naming one of
// them, and each suite item ("all", "seed002", ...; not "smoke") expanded to
// those of `names` it has, in the order of `names`, each keeping the options
// it takes (and reps).
std::vector<Item> restrict_to_benches(const std::vector<Item>& items, const std::vector<std::string>& names);

// Packs items, in order, into as few bench= values as the limits allow.
// Throws std::invalid_argument for an item that does not fit on its own.
std::vector<std::string> pack_items(const std::vector<Item>& items, size_t max_chars = max_bench_chars,
                                    size_t max_items = max_bench_items);

}  // namespace pvk::bench
