// torch_chorus._C: the process group class and its constructor for
// torch.distributed's backend registry (registered in __init__.py).
#include <pybind11/chrono.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>
#include <torch/csrc/utils/pybind.h>

#include "process_group_chorus.h"

namespace py = pybind11;

namespace {

c10::intrusive_ptr<torch_chorus::ProcessGroupChorus> Create(const c10::intrusive_ptr<c10d::Store>& store, int rank,
                                                            int size, std::chrono::milliseconds timeout,
                                                            const std::string& algo) {
  torch_chorus::ChorusOptions options;
  options.timeout = timeout;
  options.algo = algo;
  return c10::make_intrusive<torch_chorus::ProcessGroupChorus>(store, rank, size, options);
}

}  // namespace

PYBIND11_MODULE(_C, m) {
  m.doc() = "Chorus collectives as a torch.distributed process group";
  // The base class is torch's: importing torch.distributed registers it.
  py::module::import("torch.distributed");
  py::class_<torch_chorus::ProcessGroupChorus, c10d::ProcessGroup,
             c10::intrusive_ptr<torch_chorus::ProcessGroupChorus>>(m, "ProcessGroupChorus")
      .def(py::init(&Create), py::arg("store"), py::arg("rank"), py::arg("size"), py::arg("timeout"),
           py::arg("algo") = std::string(), py::call_guard<py::gil_scoped_release>())
      .def("_allreduce_compressed", &torch_chorus::ProcessGroupChorus::AllReduceCompressed, py::arg("tensor"),
           py::arg("wire"), py::arg("key"), py::call_guard<py::gil_scoped_release>())
      .def("_gossip", &torch_chorus::ProcessGroupChorus::Gossip, py::arg("tensor"), py::arg("rotate"),
           py::arg("seed"), py::call_guard<py::gil_scoped_release>());
  m.attr("WIRE_SIGN_VOTE") = static_cast<int>(chorusCompressSignVote);
  m.attr("WIRE_INT8") = static_cast<int>(chorusCompressInt8);
  m.attr("WIRE_FP16") = static_cast<int>(chorusCompressFp16);
  m.attr("WIRE_BF16") = static_cast<int>(chorusCompressBf16);
  m.attr("WIRE_ONE_BIT_EF") = static_cast<int>(chorusCompressOneBitEF);
}
