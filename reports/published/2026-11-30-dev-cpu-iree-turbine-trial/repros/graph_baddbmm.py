import torch
from iree.turbine.dynamo.passes import turbine_cpu_pass_pipeline
from torch._dynamo.backends.common import aot_autograd
from functorch.compile import make_boxed_func
def fw(gm, ex):
    print("AOT graph:\n", gm.code)
    gm2 = turbine_cpu_pass_pipeline(gm, ex)
    print("after turbine_cpu_pass_pipeline:\n", gm2.code)
    return make_boxed_func(gm2.forward)
c = torch.randn(2, 3, 4); a, b = torch.randn(2, 3, 5), torch.randn(2, 5, 4)
torch.compile(lambda c, a, b: torch.baddbmm(c, a, b, beta=0.0, alpha=1.0), backend=aot_autograd(fw_compiler=fw))(c, a, b)
