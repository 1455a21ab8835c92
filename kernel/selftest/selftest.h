// In-kernel selftests, chosen with selftest=NAME[,NAME...]. Each returns
// whether it passed and emits its own records; kernel_main turns the sum
// into the done record.
#pragma once

namespace pvk {

struct Selftest {
  const char* name;
  bool (*run)();
};

// The registry (selftest.cpp): every test, by name.
const Selftest* find_selftest(const char* name, unsigned len);
void list_selftests(char* out, unsigned cap);

bool selftest_mm();
bool selftest_fault();
bool selftest_reject();
bool selftest_cpa();
bool selftest_shootdown();

}  // namespace pvk
