#include "kernel/proc/elf_image.h"

#include <elf.h>

#include "base/lib/kstring.h"
#include "base/lib/types.h"
#include "base/abi.h"

namespace pvk {
namespace {

// [first, first + len) lies inside [0, size) without wrapping.
bool inside(uint64_t first, uint64_t len, uint64_t size) { return first <= size && len <= size - first; }

ErrorOr<void> check_header(const Elf64_Ehdr& eh, size_t header_len) {
  if (memcmp(eh.e_ident, ELFMAG, SELFMAG) || eh.e_ident[EI_CLASS] != ELFCLASS64 ||
      eh.e_ident[EI_DATA] != ELFDATA2LSB || eh.e_ident[EI_VERSION] != EV_CURRENT || eh.e_machine != EM_X86_64 ||
      eh.e_type != ET_EXEC || eh.e_phentsize != sizeof(Elf64_Phdr) || eh.e_phnum == 0 ||
      !inside(eh.e_phoff, uint64_t{eh.e_phnum} * sizeof(Elf64_Phdr), header_len))
    return Errno::ENOEXEC;
  return {};
}

// One PT_LOAD with memsz > 0; its pages must fit the program area.
ErrorOr<ElfSegment> check_segment(const Elf64_Phdr& ph, uint64_t file_size) {
  if (ph.p_filesz > ph.p_memsz || !inside(ph.p_offset, ph.p_filesz, file_size)) return Errno::ENOEXEC;
  if ((ph.p_vaddr ^ ph.p_offset) & (kPageSize - 1)) return Errno::ENOEXEC;
  // Bounded before aligning, so neither the end nor align_up can wrap.
  if (ph.p_vaddr < abi::kUserBase || ph.p_vaddr >= abi::kUserMmapBase ||
      ph.p_memsz > abi::kUserMmapBase - ph.p_vaddr)
    return Errno::ENOEXEC;
  return ElfSegment{ph.p_vaddr, ph.p_memsz, ph.p_offset, ph.p_filesz, ph.p_flags};
}

uint64_t first_page(const ElfSegment& s) { return align_down(s.vaddr, kPageSize); }
uint64_t end_page(const ElfSegment& s) { return align_up(s.vaddr + s.memsz, kPageSize); }

}  // namespace

ErrorOr<void> parse_elf_image(const uint8_t* image, size_t header_len, uint64_t file_size, ElfImage& out) {
  out = ElfImage{};
  if (!image || header_len < sizeof(Elf64_Ehdr) || header_len > file_size) return Errno::ENOEXEC;
  Elf64_Ehdr eh;
  memcpy(&eh, image, sizeof eh);  // the image may be unaligned
  TRY(check_header(eh, header_len));
  uint64_t phdr_vaddr = 0;
  bool have_phdr = false;
  for (unsigned i = 0; i < eh.e_phnum; ++i) {
    Elf64_Phdr ph;
    memcpy(&ph, image + eh.e_phoff + uint64_t{i} * sizeof ph, sizeof ph);
    if (ph.p_type == PT_INTERP) {
      out.interp = true;
      return Errno::ENOEXEC;
    }
    if (ph.p_type == PT_PHDR) phdr_vaddr = ph.p_vaddr, have_phdr = true;
    if (ph.p_type != PT_LOAD || !ph.p_memsz) continue;
    const ElfSegment s = TRY(check_segment(ph, file_size));
    // Without PT_PHDR (static executables rarely have one) the headers are
    // wherever the segment that holds their file bytes puts them.
    if (!have_phdr && eh.e_phoff >= ph.p_offset && eh.e_phoff - ph.p_offset < ph.p_filesz)
      phdr_vaddr = ph.p_vaddr + (eh.e_phoff - ph.p_offset), have_phdr = true;
    // Two segments sharing a page would map it twice (exec maps whole pages).
    for (unsigned j = 0; j < out.count; ++j)
      if (first_page(s) < end_page(out.segments[j]) && first_page(out.segments[j]) < end_page(s))
        return Errno::ENOEXEC;
    if (out.count == ElfImage::kMaxSegments) return Errno::E2BIG;
    out.segments[out.count++] = s;
    if (end_page(s) > out.brk_base) out.brk_base = end_page(s);
  }
  // The entry must be code we load: returning to user mode anywhere else
  // (a non-canonical address above all) is not the loader's to allow.
  bool entry_ok = false;
  for (unsigned j = 0; j < out.count; ++j) {
    const ElfSegment& s = out.segments[j];
    if ((s.flags & PF_X) && eh.e_entry >= s.vaddr && eh.e_entry - s.vaddr < s.memsz) entry_ok = true;
  }
  if (!entry_ok) return Errno::ENOEXEC;
  out.entry = eh.e_entry;
  out.phdr_vaddr = phdr_vaddr;
  out.phnum = eh.e_phnum;
  return {};
}

}  // namespace pvk
