"""Numba and C runtime support, no physics: the fork-safe threading layer and the choice between the serial and
parallel kernels (``threading_layer``), the C allocator's thresholds for terrain memory (``allocator``), the
compile notice (``compile_notice``) and the C library's exponential and trigonometry over arrays (``libm``)."""
