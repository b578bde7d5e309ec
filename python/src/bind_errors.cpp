// defines: asyncps_python::bind_errors (asyncps.Error and its kinds, abort_job)
#include <pybind11/pybind11.h>

#include "asyncps/error.h"
#include "asyncps/mpi_environment.h"
#include "handles.h"

namespace py = pybind11;

namespace asyncps_python {

void bind_errors(py::module_& m) {
  // The library's error kinds as Python exceptions, with the same one-line messages.
  static py::exception<asyncps::Error> error(m, "Error", PyExc_RuntimeError);
  static py::exception<asyncps::MpiError> mpi_error(m, "MpiError", error.ptr());
  static py::exception<asyncps::CheckpointError> checkpoint_error(m, "CheckpointError", error.ptr());
  static py::exception<asyncps::ConfigError> config_error(m, "ConfigError", error.ptr());
  static py::exception<asyncps::StallError> stall_error(m, "StallError", error.ptr());
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const asyncps::MpiError& e) {
      mpi_error(e.what());
    } catch (const asyncps::CheckpointError& e) {
      checkpoint_error(e.what());
    } catch (const asyncps::ConfigError& e) {
      config_error(e.what());
    } catch (const asyncps::StallError& e) {
      stall_error(e.what());
    } catch (const asyncps::Error& e) {
      error(e.what());
    }
  });
  m.def(
      "abort_job", [](const std::string& message, int exit_code) { asyncps::abort_job(message.c_str(), exit_code); },
      py::arg("message"), py::arg("exit_code") = 1,
      "Prints 'asyncps: <message> [rank R of N on HOST]' and ends every rank of the job (MPI_Abort).");
}

}  // namespace asyncps_python
