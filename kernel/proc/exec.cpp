#include "kernel/proc/exec.h"

#include <elf.h>

#include "base/arch/platform.h"
#include "base/lib/kstring.h"
#include "kernel/proc/elf_image.h"
#include "kernel/proc/fpu_state.h"
#include "kernel/proc/process.h"
#include "kernel/proc/programs.h"
#include "base/frames/frame_allocator.h"
#include "mm/kernel_space.h"
#include "base/frames/physmap.h"
#include "pvops/call/pvop.h"

namespace pvk {
namespace {

const PvkEmbeddedProgram* find_program(const char* name) {
  // "/bin/foo" and "foo" name the same program.
  const char* base = name;
  for (const char* c = name; *c; ++c)
    if (*c == '/') base = c + 1;
  for (uint64_t i = 0; i < pvk_program_count; ++i)
    if (!strcmp(pvk_programs[i].name, base)) return &pvk_programs[i];
  return nullptr;
}

uint32_t segment_prot(uint32_t pflags) {
  uint32_t prot = vm::Read;
  if (pflags & PF_W) prot |= vm::Write;
  if (pflags & PF_X) prot |= vm::Exec;
  return prot;
}

// Frames for one segment (checked by parse_elf_image), filled from the
// image, mapped at once: programs are small and eager loading keeps the
// fault path for anonymous memory. A page the file fills is copied, with only
// its bytes outside the file zeroed; only pages without file bytes (.bss) are
// cleared whole (the page_clear_cycles counter showed exec clearing every
// page before copying over it: 41 % of forkexec natively).
ErrorOr<void> load_segment(AddressSpace& as, const uint8_t* image, const ElfSegment& seg) {
  const uint64_t start = align_down(seg.vaddr, kPageSize);
  const uint64_t end = align_up(seg.vaddr + seg.memsz, kPageSize);
  const uint32_t prot = segment_prot(seg.flags);
  TRY(as.mmap(VirtAddr{start}, end - start, prot, 0, /*fixed=*/true));
  Pfn chunk[64];
  for (uint64_t va = start; va < end;) {
    unsigned n = 0;
    for (; n < 64 && va + n * kPageSize < end; ++n) {
      auto f = frames().try_alloc();
      if (f.is_error()) {
        while (n--) frames().must_free(chunk[n]);
        return f.error();
      }
      chunk[n] = f.value();
      uint8_t* dst = phys_to_virt<uint8_t>(chunk[n]);
      const uint64_t page = va + n * kPageSize;
      // The file bytes that land in this page.
      const uint64_t from = page > seg.vaddr ? page : seg.vaddr;
      const uint64_t to_file = seg.vaddr + seg.filesz;
      const uint64_t to = page + kPageSize < to_file ? page + kPageSize : to_file;
      if (to > from) {
        memset(dst, 0, from - page);
        memcpy(dst + (from - page), image + seg.offset + (from - seg.vaddr), to - from);
        memset(dst + (to - page), 0, page + kPageSize - to);
      } else {
        clear_user_page(chunk[n]);
      }
    }
    TRY(as.map_frames(VirtAddr{va}, chunk, n, prot));  // on failure it keeps or frees each frame itself
    va += n * kPageSize;
  }
  return {};
}

// argc, argv[], NULL, envp[], NULL, auxv AT_NULL, then the strings — in
// the top page of the stack, filled through the physmap before it is mapped.
ErrorOr<uint64_t> build_stack(AddressSpace& as, const char* const* argv, const char* const* envp) {
  const uint64_t top = abi::kUserStackTop;
  TRY(as.mmap(VirtAddr{top - abi::kUserStackPages * kPageSize}, abi::kUserStackPages * kPageSize, vm::Read | vm::Write,
              vm::Stack, /*fixed=*/true));
  const Pfn page = TRY(frames().try_alloc());
  uint8_t* mem = phys_to_virt<uint8_t>(page);
  clear_user_page(page);
  constexpr unsigned kMaxStrings = 64;
  uint64_t ptrs[kMaxStrings];
  unsigned count[2] = {0, 0};
  uint64_t strings = kPageSize;  // offset within the page, growing down
  const char* const* lists[2] = {argv, envp};
  unsigned n = 0;
  for (unsigned l = 0; l < 2; ++l) {
    for (unsigned i = 0; lists[l] && lists[l][i]; ++i, ++n, ++count[l]) {
      const size_t len = strlen(lists[l][i]) + 1;
      if (n == kMaxStrings || strings < len + 8 * (kMaxStrings + 8)) {
        frames().must_free(page);
        return Errno::E2BIG;
      }
      strings -= len;
      memcpy(mem + strings, lists[l][i], len);
      ptrs[n] = top - kPageSize + strings;
    }
  }
  const unsigned argc = count[0], envc = count[1];
  uint64_t sp = align_down(strings, 16) - 8 * (argc + envc + 5);
  sp = align_down(sp, 16);
  auto* words = reinterpret_cast<uint64_t*>(mem + sp);
  unsigned w = 0;
  words[w++] = argc;
  for (unsigned i = 0; i < argc; ++i) words[w++] = ptrs[i];
  words[w++] = 0;  // argv terminator
  for (unsigned i = 0; i < envc; ++i) words[w++] = ptrs[argc + i];
  words[w++] = 0;        // envp terminator
  words[w++] = AT_NULL;  // auxv
  words[w++] = 0;
  TRY(as.map_frames(VirtAddr{top - kPageSize}, &page, 1, vm::Read | vm::Write));
  return top - kPageSize + sp;
}

ErrorOr<uint64_t> load(AddressSpace& as, const uint8_t* image, const ElfImage& elf, const char* const* argv,
                       const char* const* envp) {
  for (unsigned i = 0; i < elf.count; ++i) TRY(load_segment(as, image, elf.segments[i]));
  as.set_brk_base(VirtAddr{elf.brk_base});
  return build_stack(as, argv, envp);
}

}  // namespace

bool program_exists(const char* name) { return find_program(name) != nullptr; }

ErrorOr<void> exec_program(Process& p, const char* name, const char* const* argv, const char* const* envp) {
  const PvkEmbeddedProgram* prog = find_program(name);
  if (!prog) return Errno::ENOENT;
  // Checked before anything is built: a malformed image costs nothing.
  ElfImage elf;  // ~700 bytes of a 16 KiB kernel stack
  TRY(parse_elf_image(prog->start, static_cast<size_t>(prog->end - prog->start), elf));
  AddressSpace* as = TRY(AddressSpace::try_create());
  auto sp = load(*as, prog->start, elf, argv, envp);
  if (sp.is_error()) {
    must(as->destroy(), "destroy failed exec space");
    return sp.error();
  }
  AddressSpace* old = p.as;
  p.as = as;
  // Through switch_mm: this CPU joins the new space's CPU mask (else a
  // thread it later gets on another CPU could change the tables without
  // shooting this CPU down) and leaves the old one's before it goes.
  if (&p == current()) must(switch_mm(as), "switch_mm");
  if (old) must(old->destroy(), "destroy old address space");
  TrapFrame& f = *p.frame();
  memset(&f, 0, sizeof f);
  f.rip = elf.entry;
  f.rsp = sp.value();
  f.cs = g_platform->user_cs;
  f.ss = g_platform->user_ss;
  f.rflags = 0x202;  // IF
  fpu_exec_reset(p);  // a new program starts from the clean FP state
  for (auto& a : p.actions)
    if (a.handler != abi::SIG_IGN) a = abi::KernelSigaction{};  // handlers die with the old image
  size_t n = 0;
  for (const char* c = prog->name; *c && n < sizeof p.name - 1; ++c) p.name[n++] = *c;
  p.name[n] = 0;
  return {};
}

}  // namespace pvk
