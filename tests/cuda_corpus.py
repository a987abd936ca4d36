"""The fused elementwise kernels the test suite's graphs make (recorded by conftest.py), and
what tests/test_cuda_kernels.py found compiling them."""
KERNELS = {}   # (steps, operands) -> the user's file:line of the first node with that kernel
REPORT = ""    # one line for the end of the run: how many kernels NVRTC compiled


def record(node):
    KERNELS.setdefault((node.attrs["steps"], node.attrs["operands"]), node.location)
