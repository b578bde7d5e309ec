// The extension module asyncps._asyncps; python/asyncps/__init__.py is its public face.
#include <pybind11/pybind11.h>

#include "asyncps/cpu_kernels.h"
#include "asyncps/version.h"
#include "handles.h"

namespace py = pybind11;

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
  m.def("_init_mpi", &asyncps_python::init_mpi, "MPI_Init_thread(FUNNELED) unless MPI is up; True if it did");
  m.def("_finalize", &asyncps_python::finalize_mpi,
        "closes every live and parked object (reverse order of creation), then MPI_Finalize if _init_mpi did");
}
