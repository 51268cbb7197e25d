# torchax 0.0.13 cannot be imported with torch 2.13.0 (no gemmconf involved).
# torch 2.13 dropped the named-tensor (Dimname) overloads torchax's tables name at import.
import torch
print(torch.__version__, torch.ops.aten.prod.overloads())  # no 'dim_Dimname'
import torchax  # AttributeError: The underlying op of 'aten.prod' has no overload name 'dim_Dimname'
