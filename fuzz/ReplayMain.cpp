//===- ReplayMain.cpp - runs a fuzz target over files, without libFuzzer --===//
//
// `vram-fuzz-<target> FILE|DIR...` feeds every file (a directory: every file
// in it) to LLVMFuzzerTestOneInput once: the test suite replays the
// committed corpora and reproducers this way with the normal build.
//
//===----------------------------------------------------------------------===//

#include "llvm/ADT/SmallVector.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cstdint>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int main(int argc, char **argv) {
  llvm::SmallVector<std::string> files;
  for (int i = 1; i < argc; ++i) {
    std::error_code ec;
    if (!llvm::sys::fs::is_directory(argv[i])) {
      files.push_back(argv[i]);
      continue;
    }
    for (llvm::sys::fs::directory_iterator it(argv[i], ec), end;
         it != end && !ec; it.increment(ec))
      if (!llvm::sys::fs::is_directory(it->path()))
        files.push_back(it->path());
  }
  std::sort(files.begin(), files.end());
  for (const std::string &file : files) {
    auto buffer = llvm::MemoryBuffer::getFile(file, /*IsText=*/false,
                                              /*RequiresNullTerminator=*/false);
    if (!buffer) {
      llvm::errs() << file << ": error: " << buffer.getError().message()
                   << "\n";
      return 1;
    }
    LLVMFuzzerTestOneInput(
        reinterpret_cast<const uint8_t *>((*buffer)->getBufferStart()),
        (*buffer)->getBufferSize());
  }
  llvm::outs() << "ran " << files.size() << " inputs\n";
  return 0;
}
