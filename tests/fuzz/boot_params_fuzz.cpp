// libFuzzer target: the boot-parameter parser (kernel/params) on any bytes.
// Besides memory safety (ASan, UBSan) it checks the parser's promises: an
// error is one printable line starting "pvk: "; an accepted line leaves
// every field within its documented limits.
// First: the kernel's Errno spells its names like <errno.h>'s macros,
// which <string> brings in.
#include "kernel/params/boot_params.h"

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <string>

namespace {

void check(bool ok) {
  if (!ok) __builtin_trap();  // a crash libFuzzer reports with the input
}

bool terminated(const char* s, size_t cap) { return memchr(s, 0, cap) != nullptr; }

void check_accepted(const pvk::BootParams& b) {
  check(b.batch >= 1 && b.batch <= pvk::kMaxBatch);
  check(terminated(b.selftest, sizeof b.selftest) && terminated(b.bench, sizeof b.bench) &&
        terminated(b.init, sizeof b.init));
  check(!(b.init[0] && b.bench[0]));
  unsigned items = b.bench[0] ? 1 : 0;
  for (const char* c = b.bench; *c; ++c) items += *c == ',';
  check(items <= pvk::kMaxBenchItems);
  for (const pvk::FailRate& f : b.fail) check(f.den == 0 ? f.num == 0 : f.num <= f.den);
}

void check_error(const pvk::ParamError& e) {
  check(terminated(e.message, sizeof e.message));
  check(!strncmp(e.message, "pvk: ", 5));
  for (const char* c = e.message; *c; ++c) check(*c >= 0x20 && *c <= 0x7e);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string line(reinterpret_cast<const char*>(data), size);  // NUL-terminated; an inner NUL ends it
  pvk::BootParams params;
  const auto r = pvk::parse_boot_params(line.c_str(), params);
  if (!r.is_error()) {
    check(r.error().message[0] == 0);
    check_accepted(params);
  } else {
    check_error(r.error());
  }
  // Deterministic: the same line gives the same verdict.
  pvk::BootParams again;
  const auto r2 = pvk::parse_boot_params(line.c_str(), again);
  check(r2.is_error() == r.is_error() && !strcmp(r2.error().message, r.error().message));
  return 0;
}
