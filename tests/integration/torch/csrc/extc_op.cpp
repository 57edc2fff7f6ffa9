/* SPDX-License-Identifier: GPL-2.0-or-later */
// A small C++ op of the kind DeepSpeed JIT-builds (cf. its fused_adam /
// cpu_adam ops): one in-place fused update plus a version query.  Built with
// torch.utils.cpp_extension.load() by extload.py.  EXTC_OP_VERSION comes from
// a header outside the source tree (include/extc_version.h), the way a JIT op
// depends on headers of installed packages (torch, CUDA, a vendor library).
#include <torch/extension.h>

#include "extc_version.h"

// p <- p - lr * g, elementwise, in place (a plain "fused SGD" step).
torch::Tensor sgd_step_(torch::Tensor p, torch::Tensor g, double lr)
{
    TORCH_CHECK(p.sizes() == g.sizes(), "sgd_step_: shape mismatch");
    return p.sub_(g, lr);
}

int64_t version()
{
    return EXTC_OP_VERSION;
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m)
{
    m.def("sgd_step_", &sgd_step_, "in-place SGD step: p -= lr * g");
    m.def("version", &version, "EXTC_OP_VERSION the op was compiled with");
}
