// motes._core: the nanobind extension over the C++ core. numpy arrays are read in place
// and made by numpy, the GIL is released during heavy work, motes errors become motes'
// Python exceptions, and the core's option and result structs are Python classes (their
// defaults are the core's). One file per part:
//   common.{hpp,cpp}  arrays by stride, new arrays, boxes, attributes <-> JSON, Record (a bound
//                     struct) and dict forms
//   errors.cpp        MotesError and the classes of the core's error table
//   options.cpp       LayoutOptions, WriteOptions, QuerySpec, ... and results; dtypes
//   files.cpp         write_file, File, Collection, the block cache
//   queries.cpp       Selection, select, plan_reads, count, stats, histogram, parse_expression
//   dataset.cpp       DatasetCore, PartedStep
//   request.cpp       ReadRequest, resolve_read (one read resolved and checked once)
//   parallel.cpp      MPI writes and reads, simulate_aggregation
//   fields.cpp        grid fields: field files, samplers, the HZ order
#include "common.hpp"
#include "motes/core/version.hpp"

NB_MODULE(_core, m) {
  m.doc() = "motes C++ core (layout, format, queries, analyses)";
  m.attr("version") = motes::version;  // project(VERSION) of CMakeLists.txt: motes.__version__
  motes_py::bind_errors(m);
  motes_py::bind_options(m);  // before the functions whose signatures name its classes
  motes_py::bind_files(m);
  motes_py::bind_queries(m);
  motes_py::bind_dataset(m);
  motes_py::bind_request(m);
  motes_py::bind_background(m);
  motes_py::bind_remote(m);
  motes_py::bind_parallel(m);
  motes_py::bind_grid_fields(m);
  // A host that ends without finalizing Python (ParaView's pvbatch) leaves our objects alive,
  // and nanobind would report them as leaks; the ParaView plugin turns the report off.
  m.def("set_leak_warnings", [](bool on) { nanobind::set_leak_warnings(on); },
        "Whether nanobind reports objects still alive when the interpreter ends (default True).");
}
