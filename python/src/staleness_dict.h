// defines: asyncps_python::staleness_dict
#pragma once
#include <pybind11/pybind11.h>

#include "asyncps/staleness.h"

namespace asyncps_python {
// {'count', 'mean', 'p50', 'p99', 'max'} of a staleness histogram.
inline pybind11::dict staleness_dict(const asyncps::StalenessHistogram& h) {
  pybind11::dict d;
  d["count"] = h.count();
  d["mean"] = h.mean();
  d["p50"] = h.percentile(50);
  d["p99"] = h.percentile(99);
  d["max"] = h.max();
  return d;
}
}  // namespace asyncps_python
