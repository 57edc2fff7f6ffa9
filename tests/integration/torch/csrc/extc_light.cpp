/* SPDX-License-Identifier: GPL-2.0-or-later */
// extc_op.cpp's interface without torch's headers: pybind11 alone, which
// compiles in seconds where <torch/extension.h> takes most of a minute.
// Built with torch.utils.cpp_extension.load() all the same (its lock, its
// ninja, its build directory) by extload.py when EXTC_OP_LIGHT=1, for the
// suites that test where builds go rather than how a build behaves.
#include <pybind11/pybind11.h>

#include "extc_version.h"

// p - lr * g: the SGD step of extc_op.cpp, on one number
static double sgd_step(double p, double g, double lr)
{
	return p - lr * g;
}

static long long version()
{
	return EXTC_OP_VERSION;
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m)
{
	m.def("sgd_step", &sgd_step, "p - lr * g");
	m.def("version", &version, "EXTC_OP_VERSION the op was compiled with");
}
