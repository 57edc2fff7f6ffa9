/* SPDX-License-Identifier: GPL-2.0-or-later */
// A fused optimizer step as a JIT-built C++ op, the way DeepSpeed ships its
// FusedAdam / cpu_adam optimizers: the sources come with the package and are
// compiled by torch.utils.cpp_extension.load() on first use, into
// TORCH_EXTENSIONS_DIR.
#include <torch/extension.h>

// Momentum SGD, in place: buf = momentum * buf + grad; param -= lr * buf.
void fused_sgd_step_(torch::Tensor param, torch::Tensor grad, torch::Tensor buf, double lr,
                     double momentum)
{
    TORCH_CHECK(param.sizes() == grad.sizes() && param.sizes() == buf.sizes(),
                "fused_sgd_step_: shape mismatch");
    torch::NoGradGuard no_grad;
    buf.mul_(momentum).add_(grad);
    param.sub_(buf, lr);
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m)
{
    m.def("fused_sgd_step_", &fused_sgd_step_, "in-place momentum SGD step");
}
