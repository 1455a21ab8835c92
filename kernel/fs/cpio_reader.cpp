#include "kernel/fs/cpio_reader.h"

namespace pvk::fs {
namespace {

constexpr uint64_t kHeader = 110;  // "070701" and 13 fields of 8 hex digits

constexpr uint64_t pad4(uint64_t n) { return (n + 3) & ~uint64_t{3}; }

// One 8-digit hex field; false on any other byte.
bool hex8(const uint8_t* s, uint32_t& out) {
  uint32_t v = 0;
  for (int i = 0; i < 8; ++i) {
    const uint8_t c = s[i];
    uint32_t d;
    if (c >= '0' && c <= '9') d = c - '0';
    else if (c >= 'a' && c <= 'f') d = c - 'a' + 10;
    else if (c >= 'A' && c <= 'F') d = c - 'A' + 10;
    else return false;
    v = v << 4 | d;
  }
  out = v;
  return true;
}

bool same(const char* a, size_t len, const char* lit) {
  size_t i = 0;
  for (; i < len && lit[i]; ++i)
    if (a[i] != lit[i]) return false;
  return i == len && !lit[i];
}

}  // namespace

bool CpioReader::fail(const char* what, const CpioEntry* e) {
  err_.what = what;
  err_.index = index_;
  err_.offset = at_;
  if (e) err_.name = e->name, err_.name_len = e->name_len;
  return false;
}

bool CpioReader::next(CpioEntry& out) {
  if (err_.what) return false;
  out = CpioEntry{};
  if (len_ - at_ < kHeader) return fail("truncated header");
  const uint8_t* h = p_ + at_;
  static constexpr char kMagic[] = "070701";
  for (int i = 0; i < 6; ++i)
    if (h[i] != static_cast<uint8_t>(kMagic[i])) return fail("bad magic (not a newc cpio archive)");
  uint32_t f[13];
  for (int i = 0; i < 13; ++i)
    if (!hex8(h + 6 + 8 * i, f[i])) return fail("bad header field (not hex)");
  // ino mode uid gid nlink mtime filesize devmajor devminor rdevmajor rdevminor namesize check
  out.mode = f[1], out.uid = f[2], out.gid = f[3], out.nlink = f[4], out.mtime = f[5];
  out.size = f[6];
  out.rdev_major = f[9], out.rdev_minor = f[10];
  const uint64_t namesize = f[11];
  if (namesize < 1) return fail("empty name");
  if (namesize > len_ - at_ - kHeader) return fail("name past the end of the archive");
  out.name = reinterpret_cast<const char*>(h + kHeader);
  out.name_len = namesize - 1;
  if (out.name[out.name_len] != 0) return fail("name not NUL-terminated", &out);
  const uint64_t data_at = pad4(at_ + kHeader + namesize);
  if (same(out.name, out.name_len, "TRAILER!!!")) return false;
  if (data_at > len_ || out.size > len_ - data_at) return fail("file data past the end of the archive", &out);
  out.data = p_ + data_at;
  at_ = pad4(data_at + out.size);
  if (at_ > len_) at_ = len_;
  ++index_;
  return true;
}

bool cpio_normalize(const char* name, size_t len, char* out, size_t cap, size_t& out_len) {
  size_t n = 0;
  size_t i = 0;
  while (i < len) {
    while (i < len && name[i] == '/') ++i;
    size_t j = i;
    while (j < len && name[j] != '/') {
      if (!name[j]) return false;
      ++j;
    }
    const size_t comp = j - i;
    if (comp == 0) break;
    if (comp == 1 && name[i] == '.') {
      i = j;
      continue;
    }
    if (comp == 2 && name[i] == '.' && name[i + 1] == '.') return false;
    if (n + (n ? 1 : 0) + comp + 1 > cap) return false;
    if (n) out[n++] = '/';
    for (size_t k = i; k < j; ++k) out[n++] = name[k];
    i = j;
  }
  out[n] = 0;
  out_len = n;
  return true;
}

}  // namespace pvk::fs
