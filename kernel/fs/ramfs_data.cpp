// File data: each file's frames through up to kIndexFrames index frames
// of 512 entries (pfn + 1; 0 is a hole, read as zeros). Frames come from
// the frame allocator; a file holds exactly the frames its data touches.
//
// A data frame may also be mapped into address spaces (exec and mmap map a
// file's pages privately, copy-on-write: fs::take_page_frames): the file
// holds one reference of its frame_refs count and each mapping another, so
// a frame the file lets go of (truncate, the last close of an unlinked file)
// lives on until its last mapping goes.
//
// Locking: the kernel lock orders every call that reads or changes a file,
// but a page fault maps a file's page with only its address space's lock
// held (on any CPU). So the index — which frame is page k — changes only
// under g_file_pages too, and take_page_frames looks a frame up and takes its
// reference under it: a frame the file drops is either found with its
// reference taken first, or not found.
#include "base/frames/frame_allocator.h"
#include "base/frames/frame_refs.h"
#include "base/frames/physmap.h"
#include "base/lib/kstring.h"
#include "base/lib/spinlock.h"
#include "kernel/fs/ramfs.h"

namespace pvk::fs {
namespace {

constexpr LockClass kFilePagesLockClass{"file_pages", LockRank::FilePages, LockStat::file_pages};
Spinlock g_file_pages{kFilePagesLockClass};

constexpr uint64_t kPerIndex = kPageSize / sizeof(uint64_t);
alignas(16) const uint8_t kZeros[kPageSize] = {};

uint64_t* index_frame(const Inode* n, uint64_t page) {
  const uint64_t slot = n->index[page / kPerIndex];
  return slot ? phys_to_virt<uint64_t>(Pfn{slot - 1}) : nullptr;
}

// The data frame of page `page`, or null for a hole.
uint8_t* data_frame(const Inode* n, uint64_t page) {
  const uint64_t* idx = index_frame(n, page);
  if (!idx || !idx[page % kPerIndex]) return nullptr;
  return phys_to_virt<uint8_t>(Pfn{idx[page % kPerIndex] - 1});
}

ErrorOr<Pfn> zeroed_frame(Inode* n) {
  auto f = frames().try_alloc();
  if (f.is_error()) return Errno::ENOSPC;
  memset(phys_to_virt<void>(f.value()), 0, kPageSize);
  ++n->frames;
  return f.value();
}

void free_frame(Inode* n, uint64_t slot) {
  frames().must_free(Pfn{slot - 1});
  --n->frames;
}

// A data frame: the file's reference goes; the frame with it unless an
// address space still maps it.
void put_data_frame(Inode* n, uint64_t slot) {
  put_frame_ref(Pfn{slot - 1});
  --n->frames;
}

// The data frame of `page`, made (with its index frame) if it is a hole.
ErrorOr<uint8_t*> writable_frame(Inode* n, uint64_t page) {
  SpinGuard guard(g_file_pages);
  uint64_t& islot = n->index[page / kPerIndex];
  if (!islot) islot = raw(TRY(zeroed_frame(n))) + 1;
  uint64_t* idx = phys_to_virt<uint64_t>(Pfn{islot - 1});
  uint64_t& dslot = idx[page % kPerIndex];
  if (!dslot) {
    const Pfn data = TRY(zeroed_frame(n));
    frame_refs().set(data, 1);  // the file's reference
    dslot = raw(data) + 1;
  }
  return phys_to_virt<uint8_t>(Pfn{dslot - 1});
}

// Frees every data frame from page `first` on, and index frames left empty.
void free_from(Inode* n, uint64_t first) {
  SpinGuard guard(g_file_pages);
  for (unsigned i = 0; i < kIndexFrames; ++i) {
    if (!n->index[i]) continue;
    uint64_t* idx = phys_to_virt<uint64_t>(Pfn{n->index[i] - 1});
    bool empty = true;
    for (uint64_t k = 0; k < kPerIndex; ++k) {
      const uint64_t page = i * kPerIndex + k;
      if (idx[k] && page >= first) put_data_frame(n, idx[k]), idx[k] = 0;
      empty &= !idx[k];
    }
    if (empty) free_frame(n, n->index[i]), n->index[i] = 0;
  }
}

}  // namespace

unsigned take_page_frames(const Inode* n, uint64_t page, unsigned count, Pfn* out) {
  SpinGuard guard(g_file_pages);
  if (!n->is_reg()) return 0;
  const uint64_t pages = (n->size + kPageSize - 1) / kPageSize;
  unsigned taken = 0;
  for (; taken < count && page + taken < pages; ++taken) {
    const uint64_t at = page + taken;
    const uint64_t* idx = index_frame(n, at);
    if (!idx || !idx[at % kPerIndex]) break;  // a hole
    out[taken] = Pfn{idx[at % kPerIndex] - 1};
    frame_refs().inc(out[taken]);
  }
  return taken;
}

const char* symlink_target(const Inode* n) {
  return n->is_symlink() ? reinterpret_cast<const char*>(data_frame(n, 0)) : nullptr;
}

// How much of `left` bytes lies in the page a transfer is at (`in_page`
// bytes into it): reads and writes go a page at a time.
static uint64_t chunk_in_page(uint64_t in_page, uint64_t left) {
  const uint64_t room = kPageSize - in_page;
  return room < left ? room : left;
}

void release_data(Inode* n) {
  free_from(n, 0);
  n->size = 0;
}

ErrorOr<uint64_t> read(Inode* n, uint64_t offset, uint64_t len, CopyOut out, void* ctx) {
  if (offset >= n->size) return uint64_t{0};
  if (len > n->size - offset) len = n->size - offset;
  uint64_t done = 0;
  while (done < len) {
    const uint64_t at = offset + done;
    const uint64_t in_page = at % kPageSize;
    const uint64_t chunk = chunk_in_page(in_page, len - done);
    const uint8_t* page = data_frame(n, at / kPageSize);
    const void* src = page ? page + in_page : kZeros;
    if (auto r = out(ctx, done, src, chunk); r.is_error()) {
      if (done) return done;
      return r.error();
    }
    done += chunk;
  }
  return done;
}

ErrorOr<uint64_t> write(Inode* n, uint64_t offset, uint64_t len, CopyIn in, void* ctx) {
  if (!len) return uint64_t{0};
  if (offset >= kMaxFileSize) return Errno::EFBIG;
  if (len > kMaxFileSize - offset) len = kMaxFileSize - offset;
  uint64_t done = 0;
  while (done < len) {
    const uint64_t at = offset + done;
    const uint64_t in_page = at % kPageSize;
    const uint64_t chunk = chunk_in_page(in_page, len - done);
    auto page = writable_frame(n, at / kPageSize);
    Errno e = Errno::Ok;
    if (page.is_error()) e = page.error();
    else if (auto r = in(ctx, done, page.value() + in_page, chunk); r.is_error()) e = r.error();
    if (e != Errno::Ok) {
      // Frames made for a page nothing was written to are given back.
      if (at >= n->size) free_from(n, (n->size + kPageSize - 1) / kPageSize);
      if (done) break;
      return e;
    }
    done += chunk;
    if (offset + done > n->size) n->size = offset + done;
  }
  return done;
}

ErrorOr<void> truncate(Inode* n, uint64_t size) {
  if (size > kMaxFileSize) return Errno::EFBIG;
  if (size < n->size) {
    free_from(n, (size + kPageSize - 1) / kPageSize);
    // The rest of the last page reads as zeros if the file grows again.
    if (size % kPageSize)
      if (uint8_t* page = data_frame(n, size / kPageSize)) memset(page + size % kPageSize, 0, kPageSize - size % kPageSize);
  }
  n->size = size;
  return {};
}

namespace {
ErrorOr<void> copy_in_bytes(void* ctx, uint64_t done, void* dst, size_t n) {
  memcpy(dst, static_cast<const uint8_t*>(ctx) + done, n);
  return {};
}
ErrorOr<void> copy_out_bytes(void* ctx, uint64_t done, const void* src, size_t n) {
  memcpy(static_cast<uint8_t*>(ctx) + done, src, n);
  return {};
}
}  // namespace

ErrorOr<uint64_t> write_bytes(Inode* n, uint64_t offset, const void* src, uint64_t len) {
  return write(n, offset, len, &copy_in_bytes, const_cast<void*>(src));
}
ErrorOr<uint64_t> read_bytes(Inode* n, uint64_t offset, void* dst, uint64_t len) {
  return read(n, offset, len, &copy_out_bytes, dst);
}

}  // namespace pvk::fs
