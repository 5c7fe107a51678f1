"""A fused multiply-add for the kernels: ``fma(a, b, c) = a * b + c`` rounded once.

Python 3.11's ``math`` has no ``fma`` that numba could compile, so this is LLVM's
``llvm.fma`` intrinsic, which the loop vectorizer widens like any arithmetic.

The pairwise L1 kernels use it to subtract: ``fma(y, minus_one, x)`` is ``x - y``
rounded once, the same bits as the subtraction, but it runs on the multiply-add
units, whereas the subtraction and the running sum that follows would both take
the adders. On processors whose adders and multipliers are separate pipes (AMD
Zen 4 and 5) this spreads the inner loop's work over both: 1.15-1.25x on the
4 x 4 micro-tiles; on processors where they share ports it costs nothing. The -1
must reach the kernel at run time (an argument): a constant -1 would be folded
back into a subtraction by the compiler.
"""

from llvmlite import ir
from numba.core import types
from numba.extending import intrinsic


@intrinsic
def fma(typingctx, a, b, c):
    """``a * b + c`` with one rounding, in the float type of ``a`` (``b`` and ``c`` cast to
    it)."""
    if not isinstance(a, types.Float):
        return None
    if not (isinstance(b, (types.Float, types.Integer)) and isinstance(c, types.Float)):
        return None

    def codegen(context, builder, signature, args):
        ty = signature.return_type
        lty = context.get_value_type(ty)
        x = args[0]
        y = context.cast(builder, args[1], signature.args[1], ty)
        z = context.cast(builder, args[2], signature.args[2], ty)
        fn = builder.module.declare_intrinsic("llvm.fma", [lty], ir.FunctionType(lty, [lty] * 3))
        return builder.call(fn, [x, y, z])

    return a(a, b, c), codegen
