// libvirt: pvk booted as a libvirt domain through the libvirt C API. The
// domain XML comes from a template in tools/libvirt/ (pvk-native.xml for the
// QEMU driver; pvk-xen.xml, a Xen PV domU for the libxl driver, is shipped
// and validated but needs a Xen host). Without a URI the run starts a private
// libvirtd (tools/libvirt/private-libvirtd.sh, in its own mount namespace)
// and stops it afterwards.
#pragma once

#include "pvk/run.hpp"

#include <chrono>
#include <filesystem>
#include <map>
#include <string>
#include <string_view>

namespace pvk {

inline constexpr std::string_view libvirt_native_template = "libvirt/pvk-native.xml";
inline constexpr std::string_view libvirt_xen_template = "libvirt/pvk-xen.xml";
inline constexpr std::string_view private_libvirtd_script = "libvirt/private-libvirtd.sh";

std::string xml_escape(std::string_view text);

// Replaces every @KEY@ of the template with the XML-escaped value of KEY.
// Throws std::invalid_argument naming a placeholder without a value.
std::string render_domain_xml(std::string_view xml_template, const std::map<std::string, std::string>& values);

// A libvirtd of our own for the lifetime of this object (see
// private-libvirtd.sh). Throws std::runtime_error if it does not come up.
class PrivateLibvirtd {
 public:
  explicit PrivateLibvirtd(const std::filesystem::path& tools_dir,
                           std::chrono::seconds startup = std::chrono::seconds{30});
  PrivateLibvirtd(const PrivateLibvirtd&) = delete;
  PrivateLibvirtd& operator=(const PrivateLibvirtd&) = delete;
  ~PrivateLibvirtd();

  std::string uri() const;
  const std::filesystem::path& dir() const { return dir_; }
  // libvirtd's own log and QEMU's logs (for failure reports).
  std::vector<std::string> logs(const std::string& domain) const;

 private:
  void stop();
  std::filesystem::path dir_;
  int pid_ = -1;
};

// Defines and starts pvk-native.xml on `options.libvirt_uri` (or on a private
// libvirtd), streams the serial console (a file) until the domain is shut off
// and judges the run; the domain is undefined afterwards.
RunResult run_libvirt_native(const RunOptions& options, const ConsoleEcho& echo, std::chrono::seconds timeout);

}  // namespace pvk
