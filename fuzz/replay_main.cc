// Corpus replay without libFuzzer: runs LLVMFuzzerTestOneInput on every file named on the command
// line (directories are walked one level deep). Used by the ctest `fuzz_replay_*` tests in every
// build, so the checked-in corpora and crash regressions run even without clang.
#include <dirent.h>
#include <sys/stat.h>

#include <cstdint>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

int RunFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    std::fprintf(stderr, "cannot read %s\n", path.c_str());
    return 1;
  }
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string data = ss.str();
  LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(data.data()), data.size());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  int files = 0, errors = 0;
  for (int i = 1; i < argc; ++i) {
    struct stat st {};
    if (stat(argv[i], &st) != 0) {
      std::fprintf(stderr, "no such file or directory: %s\n", argv[i]);
      return 1;
    }
    if (S_ISDIR(st.st_mode)) {
      DIR* d = opendir(argv[i]);
      while (dirent* e = readdir(d)) {
        if (e->d_name[0] == '.') continue;
        errors += RunFile(std::string(argv[i]) + "/" + e->d_name);
        ++files;
      }
      closedir(d);
    } else {
      errors += RunFile(argv[i]);
      ++files;
    }
  }
  std::printf("replayed %d inputs\n", files);
  return errors == 0 && files > 0 ? 0 : 1;
}
