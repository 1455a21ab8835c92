#include "kernel/fs/file_pages.h"

namespace pvk::fs {
namespace {

unsigned take(void* object, uint64_t index, unsigned count, Pfn* out) {
  return take_page_frames(static_cast<const Inode*>(object), index, count, out);
}
void hold(void* object) { inode_get(static_cast<Inode*>(object)); }
void drop(void* object) { inode_put(static_cast<Inode*>(object)); }

constexpr PageSourceOps kFileOps{.take_pages = &take, .hold = &hold, .drop = &drop};

}  // namespace

PageSource file_pages(Inode* n, uint64_t first_page) { return PageSource{&kFileOps, n, first_page}; }

}  // namespace pvk::fs
