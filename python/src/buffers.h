// defines: asyncps_python::FloatBuffer, float_buffer
// Zero-copy views of Python buffers as float spans. Anything with the buffer protocol (a
// numpy.ndarray, array.array('f'), memoryview) works, and so does a CPU torch.Tensor (through
// tensor.detach().numpy(), which shares its memory). A buffer of the wrong dtype, size or
// layout is a ValueError naming the call and what was given, never a crash.
#pragma once
#include <pybind11/pybind11.h>

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

namespace asyncps_python {

// Holds the Py_buffer (so the memory stays valid while MPI uses it, the GIL released or not).
struct FloatBuffer {
  pybind11::buffer_info info;
  pybind11::object owner;  // the object the buffer came from (a torch tensor's numpy view)
  std::span<float> span;
};

// `what` names the call and argument in the message ("WorkerClient.pull: params"). `floats`
// is the element count the call needs. Throws pybind11::value_error ("asyncps: <what> must
// be ...") unless `obj` is a C-contiguous native-endian float32 buffer of exactly that many
// elements (writable when `writable`). May run Python code (a tensor's detach().numpy()):
// callers convert their buffers before they take references to their own objects.
FloatBuffer float_buffer(pybind11::handle obj, std::size_t floats, std::string_view what, bool writable);

}  // namespace asyncps_python

namespace asyncps_python {

// Keys of EmbeddingTable's calls: a C-contiguous uint64 or int64 buffer of any shape (an int64's
// bits are the key: -1 is 2**64 - 1, as numpy's astype(np.uint64) makes it), or a CPU torch
// tensor of either. Anything else is a ValueError naming `what` and what was given.
struct KeyBuffer {
  pybind11::buffer_info info;
  pybind11::object owner;
  std::span<const std::uint64_t> span;
};
KeyBuffer key_buffer(pybind11::handle obj, std::string_view what);

}  // namespace asyncps_python
