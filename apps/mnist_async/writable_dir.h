// defines: mnist_async::check_writable_dir
#pragma once
#include <string>

namespace mnist_async {

// Creates `dir` if needed and checks a file can be written in it; ConfigError naming `flag`
// otherwise (--logdir on every rank; --export_dir on the chief, before training, not after).
void check_writable_dir(const std::string& dir, const char* flag);

}  // namespace mnist_async
