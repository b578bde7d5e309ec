// The extension module asyncps._asyncps; python/asyncps/__init__.py is its public face.
#include <mpi.h>
#include <pybind11/pybind11.h>

#include <string>
#include <string_view>

#include "asyncps/cpu_kernels.h"
#include "asyncps/version.h"
#include "handles.h"

namespace py = pybind11;

namespace {
// The MPI this module was compiled against, from its mpi.h ("Open MPI 4.1.4", "MPICH 4.0.2").
std::string mpi_compiled_against() {
#if defined(OMPI_MAJOR_VERSION)
  return "Open MPI " + std::to_string(OMPI_MAJOR_VERSION) + "." + std::to_string(OMPI_MINOR_VERSION) + "." +
         std::to_string(OMPI_RELEASE_VERSION);
#elif defined(MPICH_VERSION)
  return std::string("MPICH ") + MPICH_VERSION;
#else
  return "an MPI " + std::to_string(MPI_VERSION) + "." + std::to_string(MPI_SUBVERSION) + " implementation";
#endif
}

// What `python -m asyncps` prints: the build and the MPI and CPU it runs on.
py::dict build_info() {
  py::dict info;
  info["version"] = ASYNCPS_VERSION_STRING;
  info["mpi_compiled_against"] = mpi_compiled_against();
  info["mpi_standard"] = std::to_string(MPI_VERSION) + "." + std::to_string(MPI_SUBVERSION);
  char text[MPI_MAX_LIBRARY_VERSION_STRING] = {};
  int len = 0;
  MPI_Get_library_version(text, &len);  // (allowed before MPI_Init)
  std::string running(text, static_cast<std::size_t>(len));
  // the first line (some implementations count the terminating NUL in len)
  if (const auto nl = running.find_first_of(std::string_view("\r\n\0", 3)); nl != std::string::npos) running.resize(nl);
  while (!running.empty() && (running.back() == ',' || running.back() == ' ')) running.pop_back();
  info["mpi_running"] = running;
  int initialized = 0, finalized = 0, provided = -1;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (initialized && !finalized) MPI_Query_thread(&provided);
  info["thread_level"] = provided == MPI_THREAD_SINGLE       ? "MPI_THREAD_SINGLE"
                         : provided == MPI_THREAD_FUNNELED   ? "MPI_THREAD_FUNNELED"
                         : provided == MPI_THREAD_SERIALIZED ? "MPI_THREAD_SERIALIZED"
                         : provided == MPI_THREAD_MULTIPLE   ? "MPI_THREAD_MULTIPLE"
                                                             : "MPI not initialised";
  return info;
}
}  // namespace

PYBIND11_MODULE(_asyncps, m) {
  m.doc() = "libasyncps: asynchronous data-parallel training on MPI-3 one-sided communication";
  asyncps_python::bind_errors(m);
  asyncps_python::bind_layout(m);
  asyncps_python::bind_session(m);
  asyncps_python::bind_server(m);
  asyncps_python::bind_worker(m);
  asyncps_python::bind_table(m);
  asyncps_python::bind_summary(m);
  m.attr("__version__") = ASYNCPS_VERSION_STRING;
  m.def("cpu_kernel_level", &asyncps::cpu_kernel_level,
        "the CPU instruction-set level libasyncps's loops run at ('baseline', 'avx2', 'avx512'): the best this CPU "
        "runs, or the one ASYNCPS_CPU_KERNELS forces (ConfigError when that names no level this CPU runs)");
  m.def("_build_info", &build_info,
        "dict: version, mpi_compiled_against, mpi_standard, mpi_running (MPI_Get_library_version's first line), "
        "thread_level");
  m.def("_init_mpi", &asyncps_python::init_mpi, "MPI_Init_thread(FUNNELED) unless MPI is up; True if it did");
  m.def("_finalize", &asyncps_python::finalize_mpi,
        "closes every live and parked object (reverse order of creation), then MPI_Finalize if _init_mpi did");
}
