// What a file-backed VMA maps: the pages of an object a layer above mm
// keeps (a regular file of the root filesystem), reached only through its
// ops, so mm never learns what a file is. A VMA with a source is
// demand-paged from it: a fault maps the object's own frame read-only and
// copy-on-write (a write fault copies it at once), and a read fault also
// maps the neighbours the object has ready (fault-around), as Linux maps a
// program from its page cache. A page the object has no frame for (a hole,
// past its end) is anonymous memory: zeros.
#pragma once
#include <stdint.h>

#include "base/lib/error_or.h"
#include "base/lib/types.h"

namespace pvk {

struct PageSourceOps {
  // The frames of pages index, index + 1, ... up to `count` of them, each
  // with one frame_refs reference taken for the caller (taken while the
  // object cannot let go of the frame: its owner may drop its own
  // reference on another CPU at any time after), into out[]. Stops at the
  // first page the object has no frame for (a hole, past its end: the
  // fault maps zeros there) and returns how many it took. One call per run
  // of pages, so a lock the object needs is taken once per run. Called with
  // the address space's lock held, and without the kernel lock.
  unsigned (*take_pages)(void* object, uint64_t index, unsigned count, Pfn* out);
  // One VMA more, or one fewer, refers to the object (split, fork, munmap,
  // teardown): the object lives while a VMA maps it. Called where VMAs
  // change, under the space's lock; munmap and mprotect run without the
  // kernel lock, so the object counts these without it.
  void (*hold)(void* object);
  void (*drop)(void* object);
};

struct PageSource {
  const PageSourceOps* ops = nullptr;
  void* object = nullptr;
  uint64_t first_page = 0;  // the object's page at the VMA's start

  explicit operator bool() const { return ops != nullptr; }
  bool same_object(const PageSource& o) const { return ops == o.ops && object == o.object; }
  void hold() const {
    if (ops) ops->hold(object);
  }
  void drop() const {
    if (ops) ops->drop(object);
  }
  // The source of the part of a VMA that starts `pages` pages in.
  PageSource advanced(uint64_t pages) const {
    PageSource s = *this;
    if (ops) s.first_page += pages;
    return s;
  }
};

}  // namespace pvk
