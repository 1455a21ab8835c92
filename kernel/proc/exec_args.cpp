#include "kernel/proc/exec_args.h"

#include "base/frames/frame_allocator.h"
#include "base/frames/physmap.h"
#include "base/lib/kstring.h"
#include "kernel/proc/process.h"
#include "kernel/proc/user_copy.h"
#include "mm/address_space.h"

namespace pvk {

// ---- FrameBytes ----

uint32_t* FrameBytes::index() const { return phys_to_virt<uint32_t>(index_); }

Pfn FrameBytes::page(unsigned i) const { return Pfn{index()[i]}; }

ErrorOr<void> FrameBytes::reserve(uint64_t bytes, bool clear) {
  const uint64_t want = (bytes + kPageSize - 1) / kPageSize;
  if (want > kMaxPages) return Errno::ENOMEM;
  if (want > pages_ && !have_index_) {
    index_ = TRY(frames().try_alloc());
    have_index_ = true;
  }
  while (pages_ < want) {
    const Pfn f = TRY(frames().try_alloc());
    if (raw(f) > UINT32_MAX) {  // not on the machines pvk boots; refused rather than truncated
      frames().must_free(f);
      return Errno::ENOMEM;
    }
    if (clear) clear_user_page(f);
    index()[pages_++] = static_cast<uint32_t>(raw(f));
  }
  return {};
}

uint8_t* FrameBytes::at(uint64_t off) const {
  return phys_to_virt<uint8_t>(page(static_cast<unsigned>(off / kPageSize))) + off % kPageSize;
}

void FrameBytes::write(uint64_t off, const void* src, uint64_t len) {
  const auto* s = static_cast<const uint8_t*>(src);
  while (len) {
    uint64_t run = kPageSize - off % kPageSize;
    if (run > len) run = len;
    memcpy(at(off), s, run);
    off += run, s += run, len -= run;
  }
}

void FrameBytes::read(uint64_t off, void* dst, uint64_t len) const {
  auto* d = static_cast<uint8_t*>(dst);
  while (len) {
    uint64_t run = kPageSize - off % kPageSize;
    if (run > len) run = len;
    memcpy(d, at(off), run);
    off += run, d += run, len -= run;
  }
}

void FrameBytes::release() {
  if (!have_index_) return;
  for (unsigned i = given_; i < pages_; ++i) frames().must_free(page(i));
  frames().must_free(index_);
  have_index_ = false;
  pages_ = given_ = 0;
}

// ---- ExecArgs ----

namespace {

// Long copies give the other processes their turn now and then (an
// execve of 2 MiB of strings is a lot of kernel work under TCG).
void maybe_resched(uint64_t step) {
  if (step % 64 == 63 && current()) cond_resched();
}

}  // namespace

ErrorOr<void> ExecArgs::check_total(uint64_t reserved) const {
  const uint64_t pointers = 8 * ((argc_ ? argc_ : 1) + envc_);
  if (pointers + reserved >= kMaxArgBytes || string_bytes() > kMaxArgBytes - pointers - reserved) return Errno::E2BIG;
  return {};
}

// The pointers before the array's NULL: read a chunk at a time (never
// across a page boundary, so a chunk that faults faults at its first
// pointer), EFAULT at the first that does not read.
ErrorOr<void> ExecArgs::count(uint64_t user_array, uint64_t& n) {
  n = 0;
  if (!user_array) return {};
  uint64_t chunk[32];
  for (uint64_t step = 0;; ++step) {
    const uint64_t addr = user_array + n * 8;
    if (addr < user_array) return Errno::EFAULT;  // the array wraps
    const uint64_t to_page_end = kPageSize - addr % kPageSize;
    uint64_t k = to_page_end >= 8 ? to_page_end / 8 : 1;
    if (k > 32) k = 32;
    TRY(copy_from_user(chunk, addr, k * 8));
    for (uint64_t i = 0; i < k; ++i) {
      if (!chunk[i]) return {};
      if (++n > kMaxArgStrings) return Errno::E2BIG;
    }
    maybe_resched(step);
  }
}

ErrorOr<void> ExecArgs::append(const char* s, uint64_t len_with_nul) {
  TRY(bytes_.reserve(used_ + len_with_nul, /*clear=*/false));
  bytes_.write(used_, s, len_with_nul);
  used_ += len_with_nul;
  return {};
}

// Each string: measured (EFAULT if it does not read up to its NUL, E2BIG
// past kMaxArgStrlen), checked against the total, then copied. The
// caller's memory may change between the two passes (another thread):
// the copy takes the measured length and ends it with a NUL whatever it
// found there.
ErrorOr<void> ExecArgs::copy_strings(uint64_t user_array, uint64_t n) {
  for (uint64_t i = 0; i < n; ++i) {
    uint64_t str;
    TRY(copy_from_user(&str, user_array + i * 8, 8));
    uint64_t len = 0;  // with the NUL, once found
    char probe[256];
    for (uint64_t pos = 0; !len;) {
      if (pos >= kMaxArgStrlen) return Errno::E2BIG;
      const uint64_t addr = str + pos;
      if (addr < str) return Errno::EFAULT;  // wraps
      uint64_t k = kPageSize - addr % kPageSize;  // a probe never crosses a page
      if (k > sizeof probe) k = sizeof probe;
      if (k > kMaxArgStrlen - pos) k = kMaxArgStrlen - pos;
      TRY(copy_from_user(probe, addr, k));
      for (uint64_t j = 0; j < k; ++j)
        if (!probe[j]) {
          len = pos + j + 1;
          break;
        }
      pos += k;
      maybe_resched(pos / sizeof probe);
    }
    if (len > kMaxArgBytes || string_bytes() + len > limit_) return Errno::E2BIG;
    TRY(bytes_.reserve(used_ + len, /*clear=*/false));
    for (uint64_t c = 0; c < len;) {
      uint64_t run = kPageSize - (used_ + c) % kPageSize;
      if (run > len - c) run = len - c;
      TRY(copy_from_user(bytes_.at(used_ + c), str + c, run));
      c += run;
    }
    *bytes_.at(used_ + len - 1) = 0;
    used_ += len;
  }
  return {};
}

// limit_: what the strings may take once the pointers and the file name
// have theirs (Linux: E2BIG when the pointers alone reach the bound).
ErrorOr<void> ExecArgs::from_user(uint64_t user_argv, uint64_t user_envp, uint64_t reserved) {
  TRY(count(user_argv, argc_));
  TRY(count(user_envp, envc_));
  const uint64_t pointers = 8 * ((argc_ ? argc_ : 1) + envc_);
  if (pointers >= kMaxArgBytes || reserved >= kMaxArgBytes - pointers) return Errno::E2BIG;
  limit_ = kMaxArgBytes - pointers - reserved;
  TRY(copy_strings(user_argv, argc_));
  TRY(copy_strings(user_envp, envc_));
  if (!argc_) {  // Linux gives such a program an empty argv[0]
    TRY(append("", 1));
    argc_ = 1;
  }
  return {};
}

ErrorOr<void> ExecArgs::from_kernel(const char* const* argv, const char* const* envp, uint64_t reserved) {
  for (; argv && argv[argc_]; ++argc_) TRY(append(argv[argc_], strlen(argv[argc_]) + 1));
  for (; envp && envp[envc_]; ++envc_) TRY(append(envp[envc_], strlen(envp[envc_]) + 1));
  if (!argc_) {
    TRY(append("", 1));
    argc_ = 1;
  }
  return check_total(reserved);
}

ErrorOr<void> ExecArgs::replace_argv0(const char* const* with, unsigned n, uint64_t reserved) {
  if (prefix_n_ || n > 3) return Errno::ELOOP;  // one level of script only (exec.cpp)
  uint64_t len = 0;
  while (len < used_ && *bytes_.at(len)) ++len;
  skip_ = len + 1;  // argv[0] and its NUL (argc_ >= 1: from_* make sure)
  for (unsigned i = 0; i < n; ++i) {
    prefix_[i] = with[i];
    prefix_bytes_ += strlen(with[i]) + 1;
  }
  prefix_n_ = n;
  argc_ = argc_ - 1 + n;
  return check_total(reserved);
}

}  // namespace pvk
