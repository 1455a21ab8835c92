// Strong types for the three kinds of address the kernel juggles.
//
// A pseudo-physical frame number (Pfn), a machine frame number (Mfn, what Xen
// and the hardware see) and a virtual address are all 64-bit integers; making
// them distinct enum classes means passing one where another is expected does
// not compile. Natively Pfn == Mfn, but only pvops may decide that.
#pragma once
#include <stddef.h>
#include <stdint.h>

namespace pvk {

inline constexpr uint64_t kPageShift = 12;
inline constexpr uint64_t kPageSize = uint64_t{1} << kPageShift;

enum class Pfn : uint64_t {};
enum class Mfn : uint64_t {};
enum class VirtAddr : uint64_t {};
enum class PhysAddr : uint64_t {};

constexpr uint64_t raw(Pfn p) { return static_cast<uint64_t>(p); }
constexpr uint64_t raw(Mfn m) { return static_cast<uint64_t>(m); }
constexpr uint64_t raw(VirtAddr v) { return static_cast<uint64_t>(v); }
constexpr uint64_t raw(PhysAddr p) { return static_cast<uint64_t>(p); }

constexpr PhysAddr pfn_to_phys(Pfn p) { return PhysAddr{raw(p) << kPageShift}; }
constexpr Pfn phys_to_pfn(PhysAddr a) { return Pfn{raw(a) >> kPageShift}; }
constexpr VirtAddr operator+(VirtAddr v, uint64_t bytes) { return VirtAddr{raw(v) + bytes}; }
constexpr Pfn operator+(Pfn p, uint64_t n) { return Pfn{raw(p) + n}; }

constexpr uint64_t align_down(uint64_t v, uint64_t a) { return v & ~(a - 1); }
constexpr uint64_t align_up(uint64_t v, uint64_t a) { return (v + a - 1) & ~(a - 1); }

// Virtual addresses compare among themselves (the built-in relational
// operators of an enum class); arithmetic on them is spelled out here. The
// distance between two addresses is a byte count (a length, a uint64_t), and
// an address moves down by a byte count. Alignment rounds the raw value, with
// `a` a power of two as above.
constexpr uint64_t operator-(VirtAddr end, VirtAddr start) { return raw(end) - raw(start); }
constexpr VirtAddr operator-(VirtAddr v, uint64_t bytes) { return VirtAddr{raw(v) - bytes}; }
constexpr VirtAddr align_down(VirtAddr v, uint64_t a) { return VirtAddr{align_down(raw(v), a)}; }
constexpr VirtAddr align_up(VirtAddr v, uint64_t a) { return VirtAddr{align_up(raw(v), a)}; }

template <typename T>
T* as_ptr(VirtAddr v) { return reinterpret_cast<T*>(raw(v)); }
inline VirtAddr to_virt(const void* p) { return VirtAddr{reinterpret_cast<uint64_t>(p)}; }

}  // namespace pvk
