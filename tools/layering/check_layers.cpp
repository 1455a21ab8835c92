// pvk-check-layers: reads every quoted #include of the kernel sources and
// fails on one that runs up the layer stack of layers.txt, naming the file,
// the line and the rule it breaks (in the spirit of Chromium's checkdeps).
//
//   pvk-check-layers --root DIR --rules FILE
//
// Exit 0: no upward include; 1: at least one (each printed as
// "path:line: ..."); 2: bad arguments or an unreadable rules file.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

namespace fs = std::filesystem;

namespace {

struct Layer {
  std::string name;
  std::vector<std::string> prefixes;
};

// Layers top first: a lower index is higher in the stack.
bool read_rules(const fs::path& file, std::vector<Layer>& layers) {
  std::ifstream in(file);
  if (!in) return false;
  std::string line;
  while (std::getline(in, line)) {
    if (auto hash = line.find('#'); hash != std::string::npos) line.erase(hash);
    std::istringstream words(line);
    Layer layer;
    if (!(words >> layer.name)) continue;
    for (std::string prefix; words >> prefix;) layer.prefixes.push_back(prefix);
    if (layer.prefixes.empty()) return false;
    layers.push_back(layer);
  }
  return !layers.empty();
}

// The index of the layer whose longest prefix matches path, or -1.
int layer_of(const std::vector<Layer>& layers, const std::string& path) {
  int best = -1;
  size_t best_len = 0;
  for (size_t i = 0; i < layers.size(); ++i)
    for (const auto& prefix : layers[i].prefixes)
      if (path.starts_with(prefix) && prefix.size() > best_len) {
        best = static_cast<int>(i);
        best_len = prefix.size();
      }
  return best;
}

std::string allowed(const std::vector<Layer>& layers, int from) {
  std::string out;
  for (size_t i = from; i < layers.size(); ++i) out += (out.empty() ? "" : ", ") + layers[i].name;
  return out;
}

bool is_source(const fs::path& p) {
  const auto ext = p.extension().string();
  return ext == ".h" || ext == ".cpp" || ext == ".S" || ext == ".inc";
}

}  // namespace

int main(int argc, char** argv) {
  fs::path root, rules;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string opt = argv[i];
    if (opt == "--root") root = argv[i + 1];
    else if (opt == "--rules") rules = argv[i + 1];
  }
  std::vector<Layer> layers;
  if (root.empty() || rules.empty() || (argc % 2) == 0) {
    std::fprintf(stderr, "usage: pvk-check-layers --root DIR --rules FILE\n");
    return 2;
  }
  if (!read_rules(rules, layers)) {
    std::fprintf(stderr, "pvk-check-layers: cannot read the rules in %s\n", rules.c_str());
    return 2;
  }

  // Every source file under a layer's folder (a prefix ending in '/') or named by one.
  std::vector<std::string> files;
  for (const auto& layer : layers)
    for (const auto& prefix : layer.prefixes) {
      const fs::path p = root / prefix;
      if (fs::is_regular_file(p)) files.push_back(prefix);
      if (!fs::is_directory(p)) continue;
      for (const auto& e : fs::recursive_directory_iterator(p))
        if (e.is_regular_file() && is_source(e.path()))
          files.push_back(e.path().lexically_relative(root).generic_string());
    }
  std::sort(files.begin(), files.end());
  files.erase(std::unique(files.begin(), files.end()), files.end());

  static const std::regex include_re(R"re(^\s*#\s*include\s*"([^"]+)")re");
  unsigned includes = 0, upward = 0;
  for (const auto& file : files) {
    const int from = layer_of(layers, file);
    if (from < 0) continue;  // a file under a prefix that a longer prefix gives no layer
    std::ifstream in(root / file);
    std::string line;
    for (unsigned n = 1; std::getline(in, line); ++n) {
      std::smatch m;
      if (!std::regex_search(line, m, include_re)) continue;
      ++includes;
      const std::string target = m[1];
      const int to = layer_of(layers, target);
      if (to < 0) {
        ++upward;
        std::printf("%s:%u: \"%s\" belongs to no kernel layer (rule: layer %s includes only %s)\n",
                    file.c_str(), n, target.c_str(), layers[from].name.c_str(),
                    allowed(layers, from).c_str());
      } else if (to < from) {
        ++upward;
        std::printf("%s:%u: upward include of \"%s\" (layer %s) from layer %s (rule: layer %s includes only %s)\n",
                    file.c_str(), n, target.c_str(), layers[to].name.c_str(), layers[from].name.c_str(),
                    layers[from].name.c_str(), allowed(layers, from).c_str());
      }
    }
  }
  std::printf("pvk-check-layers: %zu files, %u includes, %u upward\n", files.size(), includes, upward);
  return upward ? 1 : 0;
}
