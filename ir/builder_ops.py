"""Typed `Builder` methods, one per core op.

GENERATED from the op definitions by `python -m nxcc.ir.gen_builder_ops`; do not edit.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from nxcc.ir import ops
from nxcc.ir.attributes import Symbol
from nxcc.ir.core import Value
from nxcc.ir.dtypes import DType
from nxcc.ir.opdef import OpDef


class BuilderOps:
    """``b.<op>(*operands, **attributes)`` for every core op; returns the op's first result
    (use `Builder.ops` for every result of a multi-result op)."""

    if TYPE_CHECKING:

        def op(self, opcode: OpDef | str, operands: Sequence[Value],
               attrs: Mapping[str, object] | None = None) -> Value: ...

    def abs(self, x: Value, /) -> Value:
        """The abs op."""
        return self.op(ops.abs, [x], {})

    def atan(self, x: Value, /) -> Value:
        """The atan op."""
        return self.op(ops.atan, [x], {})

    def cbrt(self, x: Value, /) -> Value:
        """The cbrt op."""
        return self.op(ops.cbrt, [x], {})

    def ceil(self, x: Value, /) -> Value:
        """The ceil op."""
        return self.op(ops.ceil, [x], {})

    def clz(self, x: Value, /) -> Value:
        """The clz op."""
        return self.op(ops.clz, [x], {})

    def cos(self, x: Value, /) -> Value:
        """The cos op."""
        return self.op(ops.cos, [x], {})

    def erf(self, x: Value, /) -> Value:
        """The erf op."""
        return self.op(ops.erf, [x], {})

    def exp(self, x: Value, /) -> Value:
        """The exp op."""
        return self.op(ops.exp, [x], {})

    def expm1(self, x: Value, /) -> Value:
        """The expm1 op."""
        return self.op(ops.expm1, [x], {})

    def floor(self, x: Value, /) -> Value:
        """The floor op."""
        return self.op(ops.floor, [x], {})

    def log(self, x: Value, /) -> Value:
        """The log op."""
        return self.op(ops.log, [x], {})

    def log1p(self, x: Value, /) -> Value:
        """The log1p op."""
        return self.op(ops.log1p, [x], {})

    def logistic(self, x: Value, /) -> Value:
        """The logistic op."""
        return self.op(ops.logistic, [x], {})

    def negate(self, x: Value, /) -> Value:
        """The negate op."""
        return self.op(ops.negate, [x], {})

    def not_(self, x: Value, /) -> Value:
        """The not op."""
        return self.op(ops.not_, [x], {})

    def popcnt(self, x: Value, /) -> Value:
        """The popcnt op."""
        return self.op(ops.popcnt, [x], {})

    def round_afz(self, x: Value, /) -> Value:
        """The round_afz op."""
        return self.op(ops.round_afz, [x], {})

    def round_even(self, x: Value, /) -> Value:
        """The round_even op."""
        return self.op(ops.round_even, [x], {})

    def rsqrt(self, x: Value, /) -> Value:
        """The rsqrt op."""
        return self.op(ops.rsqrt, [x], {})

    def sign(self, x: Value, /) -> Value:
        """The sign op."""
        return self.op(ops.sign, [x], {})

    def sin(self, x: Value, /) -> Value:
        """The sin op."""
        return self.op(ops.sin, [x], {})

    def sqrt(self, x: Value, /) -> Value:
        """The sqrt op."""
        return self.op(ops.sqrt, [x], {})

    def tan(self, x: Value, /) -> Value:
        """The tan op."""
        return self.op(ops.tan, [x], {})

    def tanh(self, x: Value, /) -> Value:
        """The tanh op."""
        return self.op(ops.tanh, [x], {})

    def add(self, lhs: Value, rhs: Value, /) -> Value:
        """The add op."""
        return self.op(ops.add, [lhs, rhs], {})

    def and_(self, lhs: Value, rhs: Value, /) -> Value:
        """The and op."""
        return self.op(ops.and_, [lhs, rhs], {})

    def atan2(self, lhs: Value, rhs: Value, /) -> Value:
        """The atan2 op."""
        return self.op(ops.atan2, [lhs, rhs], {})

    def divide(self, lhs: Value, rhs: Value, /) -> Value:
        """The divide op."""
        return self.op(ops.divide, [lhs, rhs], {})

    def maximum(self, lhs: Value, rhs: Value, /) -> Value:
        """The maximum op."""
        return self.op(ops.maximum, [lhs, rhs], {})

    def minimum(self, lhs: Value, rhs: Value, /) -> Value:
        """The minimum op."""
        return self.op(ops.minimum, [lhs, rhs], {})

    def multiply(self, lhs: Value, rhs: Value, /) -> Value:
        """The multiply op."""
        return self.op(ops.multiply, [lhs, rhs], {})

    def or_(self, lhs: Value, rhs: Value, /) -> Value:
        """The or op."""
        return self.op(ops.or_, [lhs, rhs], {})

    def power(self, lhs: Value, rhs: Value, /) -> Value:
        """The power op."""
        return self.op(ops.power, [lhs, rhs], {})

    def remainder(self, lhs: Value, rhs: Value, /) -> Value:
        """The remainder op."""
        return self.op(ops.remainder, [lhs, rhs], {})

    def shift_left(self, lhs: Value, rhs: Value, /) -> Value:
        """The shift_left op."""
        return self.op(ops.shift_left, [lhs, rhs], {})

    def shift_right_arithmetic(self, lhs: Value, rhs: Value, /) -> Value:
        """The shift_right_arithmetic op."""
        return self.op(ops.shift_right_arithmetic, [lhs, rhs], {})

    def shift_right_logical(self, lhs: Value, rhs: Value, /) -> Value:
        """The shift_right_logical op."""
        return self.op(ops.shift_right_logical, [lhs, rhs], {})

    def subtract(self, lhs: Value, rhs: Value, /) -> Value:
        """The subtract op."""
        return self.op(ops.subtract, [lhs, rhs], {})

    def xor(self, lhs: Value, rhs: Value, /) -> Value:
        """The xor op."""
        return self.op(ops.xor, [lhs, rhs], {})

    def all_gather(self, x: Value, /, *, dimension: int,
            replica_groups: Sequence[Sequence[int]] = (), channel_id: int = 0) -> Value:
        """The all_gather op."""
        return self.op(ops.all_gather, [x], {"dimension": dimension,
                "replica_groups": replica_groups, "channel_id": channel_id})

    def all_gather_done(self, lhs: Value, rhs: Value, /, *, dimension: int,
            replica_groups: Sequence[Sequence[int]] = (), channel_id: int = 0) -> Value:
        """Ends all_gather (context first)."""
        return self.op(ops.all_gather_done, [lhs, rhs], {"dimension": dimension,
                "replica_groups": replica_groups, "channel_id": channel_id})

    def all_gather_start(self, x: Value, /, *, dimension: int,
            replica_groups: Sequence[Sequence[int]] = (), channel_id: int = 0) -> Value:
        """Starts all_gather (see its done)."""
        return self.op(ops.all_gather_start, [x], {"dimension": dimension,
                "replica_groups": replica_groups, "channel_id": channel_id})

    def all_reduce(self, *operands: Value, reduction: str,
            replica_groups: Sequence[Sequence[int]] = (), channel_id: int = 0) -> Value:
        """The all_reduce op (reduction: sum | prod | max | min | and | or)."""
        return self.op(ops.all_reduce, operands, {"reduction": reduction,
                "replica_groups": replica_groups, "channel_id": channel_id})

    def all_reduce_done(self, *operands: Value) -> Value:
        """Ends all_reduce (context first)."""
        return self.op(ops.all_reduce_done, operands, {})

    def all_reduce_start(self, *operands: Value, reduction: str,
            replica_groups: Sequence[Sequence[int]] = (), channel_id: int = 0) -> Value:
        """Starts all_reduce (see its done) (reduction: sum | prod | max | min | and | or)."""
        return self.op(ops.all_reduce_start, operands, {"reduction": reduction,
                "replica_groups": replica_groups, "channel_id": channel_id})

    def all_to_all(self, x: Value, /, *, split_dimension: int, concat_dimension: int,
            replica_groups: Sequence[Sequence[int]] = (), channel_id: int = 0) -> Value:
        """The all_to_all op."""
        return self.op(ops.all_to_all, [x], {"split_dimension": split_dimension,
                "concat_dimension": concat_dimension, "replica_groups": replica_groups,
                "channel_id": channel_id})

    def all_to_all_done(self, lhs: Value, rhs: Value, /, *, split_dimension: int,
            concat_dimension: int, replica_groups: Sequence[Sequence[int]] = (),
            channel_id: int = 0) -> Value:
        """Ends all_to_all (context first)."""
        return self.op(ops.all_to_all_done, [lhs, rhs], {"split_dimension": split_dimension,
                "concat_dimension": concat_dimension, "replica_groups": replica_groups,
                "channel_id": channel_id})

    def all_to_all_start(self, x: Value, /, *, split_dimension: int, concat_dimension: int,
            replica_groups: Sequence[Sequence[int]] = (), channel_id: int = 0) -> Value:
        """Starts all_to_all (see its done)."""
        return self.op(ops.all_to_all_start, [x], {"split_dimension": split_dimension,
                "concat_dimension": concat_dimension, "replica_groups": replica_groups,
                "channel_id": channel_id})

    def bitcast_convert(self, x: Value, /, *, dtype: DType | str) -> Value:
        """Reinterpret bits; a size change adds or removes a minor dimension (as in HLO)."""
        return self.op(ops.bitcast_convert, [x], {"dtype": dtype})

    def broadcast_in_dim(self, x: Value, /, *, shape: Sequence[int],
            broadcast_dimensions: Sequence[int]) -> Value:
        """Operand dim i maps to result dim broadcast_dimensions[i] (size equal or 1)."""
        return self.op(ops.broadcast_in_dim, [x], {"shape": shape,
                "broadcast_dimensions": broadcast_dimensions})

    def call(self, *operands: Value, callee: Symbol | str) -> Value:
        """The call op."""
        return self.op(ops.call, operands, {"callee": callee})

    def clamp(self, x0: Value, x1: Value, x2: Value, /) -> Value:
        """clamp(min, x, max)"""
        return self.op(ops.clamp, [x0, x1, x2], {})

    def collective_permute(self, x: Value, /, *, source_target_pairs: Sequence[Sequence[int]],
            channel_id: int = 0) -> Value:
        """Each (source, target) pair sends source's operand to target; others get zeros."""
        return self.op(ops.collective_permute, [x], {"source_target_pairs": source_target_pairs,
                "channel_id": channel_id})

    def collective_permute_done(self, lhs: Value, rhs: Value, /, *,
            source_target_pairs: Sequence[Sequence[int]], channel_id: int = 0) -> Value:
        """Ends collective_permute (context first)."""
        return self.op(ops.collective_permute_done, [lhs, rhs],
                {"source_target_pairs": source_target_pairs, "channel_id": channel_id})

    def collective_permute_start(self, x: Value, /, *, source_target_pairs: Sequence[Sequence[int]],
            channel_id: int = 0) -> Value:
        """Starts collective_permute (see its done)."""
        return self.op(ops.collective_permute_start, [x],
                {"source_target_pairs": source_target_pairs, "channel_id": channel_id})

    def compare(self, lhs: Value, rhs: Value, /, *, direction: str) -> Value:
        """Elementwise comparison; NaN compares unequal (IEEE,
                like HLO's FLOAT type) (direction: EQ | NE | LT | LE | GT | GE)."""
        return self.op(ops.compare, [lhs, rhs], {"direction": direction})

    def concatenate(self, *operands: Value, dimension: int) -> Value:
        """The concatenate op."""
        return self.op(ops.concatenate, operands, {"dimension": dimension})

    def conditional(self, *operands: Value, branches: Sequence[Symbol | str]) -> Value:
        """conditional(selector, args...): pred true runs branches[0],
                false branches[1]; an s32 index runs that branch, out of range the last."""
        return self.op(ops.conditional, operands, {"branches": branches})

    def convolution(self, lhs: Value, rhs: Value, /, *, window_strides: Sequence[int],
            padding: Sequence[Sequence[int]], lhs_dilation: Sequence[int],
            rhs_dilation: Sequence[int], feature_group_count: int = 1, batch_group_count: int = 1,
            input_batch_dim: int, input_feature_dim: int, input_spatial_dims: Sequence[int],
            kernel_input_feature_dim: int, kernel_output_feature_dim: int,
            kernel_spatial_dims: Sequence[int], output_batch_dim: int, output_feature_dim: int,
            output_spatial_dims: Sequence[int], result_dtype: DType | str | None = None) -> Value:
        """HLO convolution (cross-correlation) with explicit dimension numbers."""
        return self.op(ops.convolution, [lhs, rhs], {"window_strides": window_strides,
                "padding": padding, "lhs_dilation": lhs_dilation, "rhs_dilation": rhs_dilation,
                "feature_group_count": feature_group_count, "batch_group_count": batch_group_count,
                "input_batch_dim": input_batch_dim, "input_feature_dim": input_feature_dim,
                "input_spatial_dims": input_spatial_dims,
                "kernel_input_feature_dim": kernel_input_feature_dim,
                "kernel_output_feature_dim": kernel_output_feature_dim,
                "kernel_spatial_dims": kernel_spatial_dims, "output_batch_dim": output_batch_dim,
                "output_feature_dim": output_feature_dim,
                "output_spatial_dims": output_spatial_dims, "result_dtype": result_dtype})

    def copy(self, x: Value, /) -> Value:
        """Identity (a fresh buffer)."""
        return self.op(ops.copy, [x], {})

    def dot_general(self, lhs: Value, rhs: Value, /, *, lhs_batch_dims: Sequence[int] = (),
            rhs_batch_dims: Sequence[int] = (), lhs_contracting_dims: Sequence[int],
            rhs_contracting_dims: Sequence[int], result_dtype: DType | str | None = None) -> Value:
        """Result dims: batch, lhs free, rhs free (HLO order)."""
        return self.op(ops.dot_general, [lhs, rhs], {"lhs_batch_dims": lhs_batch_dims,
                "rhs_batch_dims": rhs_batch_dims, "lhs_contracting_dims": lhs_contracting_dims,
                "rhs_contracting_dims": rhs_contracting_dims, "result_dtype": result_dtype})

    def dynamic_slice(self, *operands: Value, slice_sizes: Sequence[int]) -> Value:
        """dynamic_slice(x, starts...): starts are clamped so the slice fits, as in HLO."""
        return self.op(ops.dynamic_slice, operands, {"slice_sizes": slice_sizes})

    def dynamic_update_slice(self, *operands: Value) -> Value:
        """The dynamic_update_slice op."""
        return self.op(ops.dynamic_update_slice, operands, {})

    def fused_convolution(self, *operands: Value, window_strides: Sequence[int],
            padding: Sequence[Sequence[int]], lhs_dilation: Sequence[int],
            rhs_dilation: Sequence[int], feature_group_count: int = 1, batch_group_count: int = 1,
            input_batch_dim: int, input_feature_dim: int, input_spatial_dims: Sequence[int],
            kernel_input_feature_dim: int, kernel_output_feature_dim: int,
            kernel_spatial_dims: Sequence[int], output_batch_dim: int, output_feature_dim: int,
            output_spatial_dims: Sequence[int], result_dtype: DType | str | None = None,
            program: str) -> Value:
        """A convolution, then an elementwise program on its result (a0) in place."""
        return self.op(ops.fused_convolution, operands, {"window_strides": window_strides,
                "padding": padding, "lhs_dilation": lhs_dilation, "rhs_dilation": rhs_dilation,
                "feature_group_count": feature_group_count, "batch_group_count": batch_group_count,
                "input_batch_dim": input_batch_dim, "input_feature_dim": input_feature_dim,
                "input_spatial_dims": input_spatial_dims,
                "kernel_input_feature_dim": kernel_input_feature_dim,
                "kernel_output_feature_dim": kernel_output_feature_dim,
                "kernel_spatial_dims": kernel_spatial_dims, "output_batch_dim": output_batch_dim,
                "output_feature_dim": output_feature_dim,
                "output_spatial_dims": output_spatial_dims, "result_dtype": result_dtype,
                "program": program})

    def fused_elementwise(self, *operands: Value, program: str, shape: Sequence[int]) -> Value:
        """A chain of elementwise ops evaluated in one pass, block by block (ir/fused_program)."""
        return self.op(ops.fused_elementwise, operands, {"program": program, "shape": shape})

    def gather(self, lhs: Value, rhs: Value, /, *, offset_dims: Sequence[int],
            collapsed_slice_dims: Sequence[int], operand_batching_dims: Sequence[int] = (),
            start_indices_batching_dims: Sequence[int] = (), start_index_map: Sequence[int],
            index_vector_dim: int, slice_sizes: Sequence[int],
            indices_are_sorted: bool = False) -> Value:
        """HLO gather; out-of-range starts are clamped."""
        return self.op(ops.gather, [lhs, rhs], {"offset_dims": offset_dims,
                "collapsed_slice_dims": collapsed_slice_dims,
                "operand_batching_dims": operand_batching_dims,
                "start_indices_batching_dims": start_indices_batching_dims,
                "start_index_map": start_index_map, "index_vector_dim": index_vector_dim,
                "slice_sizes": slice_sizes, "indices_are_sorted": indices_are_sorted})

    def iota(self, *, dtype: DType | str, shape: Sequence[int], dimension: int) -> Value:
        """Counts 0, 1, ... along `dimension`."""
        return self.op(ops.iota, [], {"dtype": dtype, "shape": shape, "dimension": dimension})

    def is_finite(self, x: Value, /) -> Value:
        """The is_finite op."""
        return self.op(ops.is_finite, [x], {})

    def layer_norm(self, x: Value, /, *, dimension: int, epsilon: float) -> Value:
        """(x - mean) * rsqrt(mean((x - mean)^2) + epsilon) along `dimension`."""
        return self.op(ops.layer_norm, [x], {"dimension": dimension, "epsilon": epsilon})

    def optimization_barrier(self, *operands: Value) -> Value:
        """Identity; recomputation reads through one so CSE keeps the copy apart."""
        return self.op(ops.optimization_barrier, operands, {})

    def pad(self, lhs: Value, rhs: Value, /, *, low: Sequence[int], high: Sequence[int],
            interior: Sequence[int]) -> Value:
        """pad(x, value): low/high may be negative (cropping), as in HLO."""
        return self.op(ops.pad, [lhs, rhs], {"low": low, "high": high, "interior": interior})

    def partition_id(self) -> Value:
        """This core's index within its program."""
        return self.op(ops.partition_id, [], {})

    def random_bits(self, lhs: Value, rhs: Value, /, *, shape: Sequence[int]) -> Value:
        """Philox4x32-10 bits of (key, counter); see ir/ops/random.py."""
        return self.op(ops.random_bits, [lhs, rhs], {"shape": shape})

    def recv(self, *, source_target_pairs: Sequence[Sequence[int]], channel_id: int = 0) -> Value:
        """Starts receiving on the pairs' targets."""
        return self.op(ops.recv, [], {"source_target_pairs": source_target_pairs,
                "channel_id": channel_id})

    def recv_done(self, x: Value, /, *, source_target_pairs: Sequence[Sequence[int]],
            channel_id: int = 0, dtype: DType | str, shape: Sequence[int]) -> Value:
        """The received value on a pair's target; zeros elsewhere."""
        return self.op(ops.recv_done, [x], {"source_target_pairs": source_target_pairs,
                "channel_id": channel_id, "dtype": dtype, "shape": shape})

    def reduce(self, *operands: Value, dimensions: Sequence[int],
            computation: Symbol | str) -> Value:
        """reduce(inputs..., inits...) over `dimensions` with @computation(acc..., x...)."""
        return self.op(ops.reduce, operands, {"dimensions": dimensions, "computation": computation})

    def reduce_scatter(self, x: Value, /, *, dimension: int, reduction: str,
            replica_groups: Sequence[Sequence[int]] = (), channel_id: int = 0) -> Value:
        """The reduce_scatter op (reduction: sum | prod | max | min | and | or)."""
        return self.op(ops.reduce_scatter, [x], {"dimension": dimension, "reduction": reduction,
                "replica_groups": replica_groups, "channel_id": channel_id})

    def reduce_scatter_done(self, lhs: Value, rhs: Value, /, *, dimension: int, reduction: str,
            replica_groups: Sequence[Sequence[int]] = (), channel_id: int = 0) -> Value:
        """Ends reduce_scatter (context first) (reduction: sum | prod | max | min | and | or)."""
        return self.op(ops.reduce_scatter_done, [lhs, rhs], {"dimension": dimension,
                "reduction": reduction, "replica_groups": replica_groups,
                "channel_id": channel_id})

    def reduce_scatter_start(self, x: Value, /, *, dimension: int, reduction: str,
            replica_groups: Sequence[Sequence[int]] = (), channel_id: int = 0) -> Value:
        """Starts reduce_scatter (see its done) (reduction: sum | prod | max | min | and | or)."""
        return self.op(ops.reduce_scatter_start, [x], {"dimension": dimension,
                "reduction": reduction, "replica_groups": replica_groups,
                "channel_id": channel_id})

    def reduce_window(self, *operands: Value, window_dimensions: Sequence[int],
            window_strides: Sequence[int], base_dilations: Sequence[int],
            window_dilations: Sequence[int], padding: Sequence[Sequence[int]],
            computation: Symbol | str) -> Value:
        """The reduce_window op."""
        return self.op(ops.reduce_window, operands, {"window_dimensions": window_dimensions,
                "window_strides": window_strides, "base_dilations": base_dilations,
                "window_dilations": window_dilations, "padding": padding,
                "computation": computation})

    def replica_id(self) -> Value:
        """This replica's index."""
        return self.op(ops.replica_id, [], {})

    def reverse(self, x: Value, /, *, dimensions: Sequence[int]) -> Value:
        """The reverse op."""
        return self.op(ops.reverse, [x], {"dimensions": dimensions})

    def scatter(self, *operands: Value, update_window_dims: Sequence[int],
            inserted_window_dims: Sequence[int], input_batching_dims: Sequence[int] = (),
            scatter_indices_batching_dims: Sequence[int] = (),
            scatter_dims_to_operand_dims: Sequence[int], index_vector_dim: int,
            computation: Symbol | str, indices_are_sorted: bool = False,
            unique_indices: bool = False) -> Value:
        """HLO scatter(inputs..., indices, updates...); out-of-range updates are skipped."""
        return self.op(ops.scatter, operands, {"update_window_dims": update_window_dims,
                "inserted_window_dims": inserted_window_dims,
                "input_batching_dims": input_batching_dims,
                "scatter_indices_batching_dims": scatter_indices_batching_dims,
                "scatter_dims_to_operand_dims": scatter_dims_to_operand_dims,
                "index_vector_dim": index_vector_dim, "computation": computation,
                "indices_are_sorted": indices_are_sorted, "unique_indices": unique_indices})

    def select(self, x0: Value, x1: Value, x2: Value, /) -> Value:
        """The select op."""
        return self.op(ops.select, [x0, x1, x2], {})

    def select_and_scatter(self, x0: Value, x1: Value, x2: Value, /, *,
            window_dimensions: Sequence[int], window_strides: Sequence[int],
            padding: Sequence[Sequence[int]], select: Symbol | str,
            scatter: Symbol | str) -> Value:
        """The select_and_scatter op."""
        return self.op(ops.select_and_scatter, [x0, x1, x2],
                {"window_dimensions": window_dimensions, "window_strides": window_strides,
                "padding": padding, "select": select, "scatter": scatter})

    def send(self, x: Value, /, *, source_target_pairs: Sequence[Sequence[int]],
            channel_id: int = 0) -> Value:
        """Each (source, target) pair: source sends its operand to target."""
        return self.op(ops.send, [x], {"source_target_pairs": source_target_pairs,
                "channel_id": channel_id})

    def send_done(self, x: Value, /) -> Value:
        """The send whose context it takes has completed."""
        return self.op(ops.send_done, [x], {})

    def slice(self, x: Value, /, *, start_indices: Sequence[int], limit_indices: Sequence[int],
            strides: Sequence[int]) -> Value:
        """The slice op."""
        return self.op(ops.slice, [x], {"start_indices": start_indices,
                "limit_indices": limit_indices, "strides": strides})

    def softmax(self, x: Value, /, *, dimension: int) -> Value:
        """exp(x - max) / sum(exp(x - max)) along `dimension` (made by the fusion pass)."""
        return self.op(ops.softmax, [x], {"dimension": dimension})

    def sort(self, *operands: Value, dimension: int, is_stable: bool = False,
            comparator: Symbol | str) -> Value:
        """Sorts all operands along `dimension` by @comparator(a0, b0, a1, b1, ...)."""
        return self.op(ops.sort, operands, {"dimension": dimension, "is_stable": is_stable,
                "comparator": comparator})

    def tp_copy(self, x: Value, /, *, replica_groups: Sequence[Sequence[int]] = (),
            channel_id: int = 0) -> Value:
        """Identity; its gradient is the sum over its replica groups (an all_reduce)."""
        return self.op(ops.tp_copy, [x], {"replica_groups": replica_groups,
                "channel_id": channel_id})

    def transpose(self, x: Value, /, *, permutation: Sequence[int]) -> Value:
        """Result dim i is operand dim permutation[i]."""
        return self.op(ops.transpose, [x], {"permutation": permutation})

    def while_(self, *operands: Value, condition: Symbol | str, body: Symbol | str) -> Value:
        """while(state...): state = @body(state) while @condition(state)."""
        return self.op(ops.while_, operands, {"condition": condition, "body": body})
