// defines: asyncps_python::bind_errors (asyncps.Error and its kinds, abort_job)
#include <pybind11/pybind11.h>

#include "asyncps/error.h"
#include "asyncps/mpi_environment.h"
#include "args.h"
#include "handles.h"

namespace py = pybind11;

namespace asyncps_python {

void bind_errors(py::module_& m) {
  // The library's error kinds as Python exceptions, with the same one-line messages, prefixed
  // "asyncps: " like every exception the module raises (the binding's own checks throw these
  // kinds with the prefix already in place).
  static py::exception<asyncps::Error> error(m, "Error", PyExc_RuntimeError);
  static py::exception<asyncps::MpiError> mpi_error(m, "MpiError", error.ptr());
  static py::exception<asyncps::CheckpointError> checkpoint_error(m, "CheckpointError", error.ptr());
  static py::exception<asyncps::ConfigError> config_error(m, "ConfigError", error.ptr());
  static py::exception<asyncps::StallError> stall_error(m, "StallError", error.ptr());
  py::register_exception_translator([](std::exception_ptr p) {
    const auto text = [](const std::exception& e) {
      const std::string w = e.what();
      return w.rfind("asyncps: ", 0) == 0 ? w : "asyncps: " + w;
    };
    try {
      if (p) std::rethrow_exception(p);
    } catch (const asyncps::MpiError& e) {
      mpi_error(text(e).c_str());
    } catch (const asyncps::CheckpointError& e) {
      checkpoint_error(text(e).c_str());
    } catch (const asyncps::ConfigError& e) {
      config_error(text(e).c_str());
    } catch (const asyncps::StallError& e) {
      stall_error(text(e).c_str());
    } catch (const asyncps::Error& e) {
      error(text(e).c_str());
    }
  });
  m.def(
      "abort_job",
      [](py::handle message, py::handle exit_code) {
        std::string text = str_arg(message, "abort_job", "message");
        const int code = int_arg(exit_code, "abort_job", "exit_code");
        if (text.rfind("asyncps: ", 0) == 0) text.erase(0, 9);  // abort_job(str(e)): the line has its prefix
        asyncps::abort_job(text.c_str(), code);
      },
      py::arg("message"), py::arg("exit_code") = 1,
      "Prints 'asyncps: <message> [rank R of N on HOST]' as one line (line breaks become spaces) and ends every "
      "rank of the job (MPI_Abort) with exit_code, in [1, 255] (any other code, 0 among them, ends it with 1: an "
      "abort is never a success). Callable from any thread (a watchdog's last resort).");
}

}  // namespace asyncps_python
