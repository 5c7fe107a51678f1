"""A multiply-add for the kernels: ``muladd(a, b, c) = a * b + c``.

This is LLVM's ``llvm.fmuladd``: one fused multiply-add instruction where the processor
has one (rounded once), else a multiplication and an addition (Python 3.11's ``math`` has
no ``fma`` for numba to compile, and ``llvm.fma`` would fall back to a slow library call
on a processor without the instruction). The loop vectorizer widens it like any
arithmetic.

The pairwise L1 kernels use it to subtract: ``muladd(y, minus_one, x)`` is ``x - y``,
the same bits fused or not (``-1 * y`` is exact), but fused it runs on the multiply-add
units, whereas the subtraction and the running sum that follows would both take the
adders. On processors whose adders and multipliers are separate pipes (AMD Zen 4 and 5)
this spreads the inner loop's work over both: 1.1-1.25x on the 4 x 4 micro-tiles; where
they share ports it costs nothing. The -1 must reach the kernel at run time (an
argument): a constant -1 would be folded back into a subtraction by the compiler.
"""

from llvmlite import ir
from numba.core import types
from numba.extending import intrinsic


@intrinsic
def muladd(typingctx, a, b, c):
    """``a * b + c`` in the float type of ``a`` (``b`` and ``c`` cast to it), fused into one
    rounding where the processor has a fused multiply-add."""
    if not all(isinstance(v, types.Float) for v in (a, b, c)):
        return None

    def codegen(context, builder, signature, args):
        ty = signature.return_type
        lty = context.get_value_type(ty)
        x = args[0]
        y = context.cast(builder, args[1], signature.args[1], ty)
        z = context.cast(builder, args[2], signature.args[2], ty)
        fnty = ir.FunctionType(lty, [lty] * 3)
        fn = builder.module.declare_intrinsic("llvm.fmuladd", [lty], fnty)
        return builder.call(fn, [x, y, z])

    return a(a, b, c), codegen
