// defines: asyncps_python::track, close_all, init_mpi, finalize_mpi
#include "lifetime.h"

#include <mpi.h>

#include <string>
#include <vector>

#include "asyncps/mpi_environment.h"

namespace asyncps_python {
namespace {
std::vector<std::weak_ptr<Closable>>& registry() {
  static std::vector<std::weak_ptr<Closable>> objects;
  return objects;
}
std::unique_ptr<asyncps::MpiEnvironment>& environment() {
  static std::unique_ptr<asyncps::MpiEnvironment> env;
  return env;
}
}  // namespace

void track(const std::shared_ptr<Closable>& object) {
  auto& r = registry();
  std::erase_if(r, [](const std::weak_ptr<Closable>& w) { return w.expired(); });
  r.push_back(object);
}

void close_all() noexcept {
  int finalized = 0;
  MPI_Finalized(&finalized);
  auto& r = registry();
  if (!finalized) {
    for (auto it = r.rbegin(); it != r.rend(); ++it) {
      if (auto object = it->lock()) {
        try {
          object->close();
        } catch (const std::exception& e) {
          asyncps::abort_job((std::string("at exit: ") + e.what()).c_str());
        }
      }
    }
  }
  r.clear();
}

bool init_mpi() {
  auto& env = environment();
  if (!env) env = std::make_unique<asyncps::MpiEnvironment>();
  return env->owns_mpi();
}

void finalize_mpi() noexcept {
  close_all();
  environment().reset();
}

}  // namespace asyncps_python
