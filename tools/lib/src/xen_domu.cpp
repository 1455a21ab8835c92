#include "pvk/xen_domu.hpp"

#include "pvk/process.hpp"
#include "pvk/xen.hpp"  // escape_commas

#include <fmt/format.h>

#include <fstream>
#include <iterator>
#include <sstream>
#include <stdexcept>

namespace pvk {
namespace {

namespace fs = std::filesystem;

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error(fmt::format("cannot read {}", path.string()));
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// One newc entry ("070701": ASCII header of 8-digit hex fields).
void cpio_entry(std::string& out, std::string_view name, unsigned mode, std::string_view data) {
  const unsigned ino = static_cast<unsigned>(out.size()) + 1;  // distinct within one archive
  out += fmt::format("070701{:08X}{:08X}{:08X}{:08X}{:08X}{:08X}{:08X}{:08X}{:08X}{:08X}{:08X}{:08X}{:08X}", ino,
                     mode, 0, 0, 1, 0, data.size(), 0, 0, 0, 0, name.size() + 1, 0);
  out += name;
  out += '\0';
  out.append((4 - out.size() % 4) % 4, '\0');
  out += data;
  out.append((4 - out.size() % 4) % 4, '\0');
}

}  // namespace

Dom0Image dom0_image(const fs::path& tools_dir, const fs::path& cache_dir,
                     const std::function<void(std::string_view)>& note, bool libvirt) {
  const fs::path builder = tools_dir / dom0_builder_path;
  if (!fs::is_regular_file(builder))
    throw std::runtime_error(fmt::format("dom0 image builder {} not found", builder.string()));
  std::vector<std::string> argv = {"bash", builder.string(), cache_dir.string()};
  if (libvirt) argv.push_back("libvirt");
  run_builder_script(argv, "building the dom0 image", note);
  Dom0Image image{cache_dir / "vmlinuz", cache_dir / "dom0.cpio.gz"};
  if (!fs::is_regular_file(image.kernel) || !fs::is_regular_file(image.initramfs))
    throw std::runtime_error(fmt::format("the dom0 image builder left no vmlinuz/dom0.cpio.gz in {}",
                                         cache_dir.string()));
  return image;
}

std::string run_archive(const std::string& kernel_image, const std::string& params,
                        std::chrono::seconds domain_timeout, std::string_view via, unsigned vcpus) {
  std::string out;
  cpio_entry(out, "pvk", 040755, "");
  cpio_entry(out, "pvk/pvk.elf", 0100755, kernel_image);
  cpio_entry(out, "pvk/params", 0100644, params + "\n");
  cpio_entry(out, "pvk/timeout", 0100644, fmt::format("{}\n", domain_timeout.count()));
  cpio_entry(out, "pvk/via", 0100644, fmt::format("{}\n", via));
  if (vcpus > 1) cpio_entry(out, "pvk/vcpus", 0100644, fmt::format("{}\n", vcpus));
  cpio_entry(out, "TRAILER!!!", 0, "");
  out.append((512 - out.size() % 512) % 512, '\0');
  return out;
}

void write_run_initrd(const Dom0Image& dom0, const fs::path& kernel, const std::string& params,
                      std::chrono::seconds domain_timeout, const fs::path& out, std::string_view via,
                      unsigned vcpus) {
  std::string initrd = read_file(dom0.initramfs);
  initrd.append((512 - initrd.size() % 512) % 512, '\0');
  initrd += run_archive(read_file(kernel), params, domain_timeout, via, vcpus);
  std::ofstream file(out, std::ios::binary | std::ios::trunc);
  file.write(initrd.data(), static_cast<std::streamsize>(initrd.size()));
  if (!file.flush()) throw std::runtime_error(fmt::format("cannot write {}", out.string()));
}

std::vector<std::string> xen_domu_argv(const QemuConfig& config, const Dom0Image& dom0, const fs::path& initrd,
                                       std::string_view cpu) {
  for (const fs::path& p : {dom0.kernel, initrd})
    if (p.string().find_first_of(" \t") != std::string::npos)
      throw std::invalid_argument(fmt::format("path must not contain blanks under Xen: {}", p.string()));
  // No SMAP (xen_domu_cpu): a PV dom0 dies in Xen's bounce-frame code with
  // SMAP under TCG. 2 GiB: 512 MiB for dom0, the rest for domUs.
  std::vector<std::string> argv{
      config.qemu,
      "-accel", qemu_accel(config),
      "-cpu", std::string(cpu),
      "-m", "2048",
      "-smp", std::to_string(config.smp),
      "-display", "none",
      "-monitor", "none",
      "-serial", "stdio",
      "-no-reboot",
      "-kernel", config.xen_image.string(),
      "-append", std::string(xen_domu_command_line),
      "-initrd", escape_commas(dom0.kernel.string()) + " " + std::string(dom0_kernel_args) + "," +
                     escape_commas(initrd.string()),
  };
  if (config.gdb) argv.insert(argv.end(), {"-s", "-S"});
  return argv;
}

}  // namespace pvk
