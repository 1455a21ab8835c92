// Reads a newc cpio archive ("070701" headers), the root filesystem's
// format: pure code over a byte range, so the host tests and a libFuzzer
// target (tests/fuzz/cpio_reader_fuzz.cpp) drive it directly.
#pragma once
#include <stddef.h>
#include <stdint.h>

namespace pvk::fs {

struct CpioEntry {
  const char* name = nullptr;  // not NUL-terminated in the archive's terms: use name_len
  size_t name_len = 0;
  uint32_t mode = 0, uid = 0, gid = 0, nlink = 0;
  uint64_t mtime = 0;
  uint32_t rdev_major = 0, rdev_minor = 0;  // character devices
  const uint8_t* data = nullptr;
  uint64_t size = 0;
};

// Why an archive is refused: one line's worth, naming the entry (by index
// and, when its header was readable, by name).
struct CpioError {
  const char* what = nullptr;  // null: no error
  uint64_t index = 0;          // the entry's position in the archive, from 0
  uint64_t offset = 0;         // where its header starts
  const char* name = nullptr;  // its name, when the header got that far
  size_t name_len = 0;
};

class CpioReader {
 public:
  CpioReader(const uint8_t* bytes, uint64_t len) : p_(bytes), len_(len) {}
  // The next entry. False at TRAILER!!! (done, error() empty) or on a
  // malformed archive (error() says why; nothing after it is read).
  bool next(CpioEntry& out);
  const CpioError& error() const { return err_; }

 private:
  bool fail(const char* what, const CpioEntry* e = nullptr);
  const uint8_t* p_;
  uint64_t len_;
  uint64_t at_ = 0;
  uint64_t index_ = 0;
  CpioError err_{};
};

// A path of the archive made relative to its root: "./a//b/" -> "a/b";
// "." and "" become the root itself (length 0). False when the name would
// leave the root ("..", or any component "..") or holds a NUL. Absolute
// names are taken as relative to the root, as Linux's initramfs does.
bool cpio_normalize(const char* name, size_t len, char* out, size_t cap, size_t& out_len);

}  // namespace pvk::fs
