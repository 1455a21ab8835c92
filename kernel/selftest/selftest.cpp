#include "kernel/selftest/selftest.h"

#include "base/lib/format.h"
#include "base/lib/kstring.h"

namespace pvk {
namespace {
const Selftest kSelftests[] = {
    {"mm", &selftest_mm},
    {"fault", &selftest_fault},
    {"reject", &selftest_reject},
    {"cpa", &selftest_cpa},
    {"shootdown", &selftest_shootdown},
};
}  // namespace

const Selftest* find_selftest(const char* name, unsigned len) {
  for (const Selftest& t : kSelftests)
    if (strlen(t.name) == len && !strncmp(t.name, name, len)) return &t;
  return nullptr;
}

void list_selftests(char* out, unsigned cap) {
  unsigned n = 0;
  out[0] = 0;
  for (const Selftest& t : kSelftests) n += format(out + n, cap - n, n ? "|%s" : "%s", t.name);
}

}  // namespace pvk
