// libFuzzer target: the root filesystem's archive reader
// (kernel/fs/cpio_reader.cpp), which reads the untrusted initrd at boot.
// The input is copied into a buffer of exactly its size, so ASan flags any
// read past it; every entry handed out must lie inside the input, and a
// name that normalizes must stay inside the root.
#include "kernel/fs/cpio_reader.h"

#include <stdint.h>
#include <string.h>

#include <vector>

namespace {

void check(bool ok) {
  if (!ok) __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::vector<uint8_t> buf(data, data + size);
  const uint8_t* begin = buf.data();
  const uint8_t* end = begin + size;
  pvk::fs::CpioReader reader(begin, size);
  pvk::fs::CpioEntry e;
  unsigned entries = 0;
  while (reader.next(e)) {
    const auto* name = reinterpret_cast<const uint8_t*>(e.name);
    check(name >= begin && name + e.name_len < end && e.name[e.name_len] == 0);
    check(e.data >= begin && e.data <= end && e.size <= static_cast<uint64_t>(end - e.data));
    char out[4096];
    size_t n = 0;
    if (pvk::fs::cpio_normalize(e.name, e.name_len, out, sizeof out, n)) {
      check(n < sizeof out && out[n] == 0 && (n == 0 || out[0] != '/'));
      for (size_t i = 0; i + 1 < n; ++i) check(!(out[i] == '.' && out[i + 1] == '.' && (i == 0 || out[i - 1] == '/') &&
                                                 (i + 2 == n || out[i + 2] == '/')));
    }
    check(++entries <= size / 110 + 1);  // each entry takes a header's bytes: the loop ends
  }
  return 0;
}
