"builtin.module"() <{sym_name = "jit_mlp"}> ({
  "func.func"() <{arg_attrs = [{}, {}, {}, {}, {}], function_type = (tensor<4x8xf32>, tensor<8x16xf32>, tensor<16xf32>, tensor<16x5xf32>, tensor<5xf32>) -> (tensor<4x5xf32>, tensor<4xi32>), res_attrs = [{jax.result_info = "result[0]"}, {jax.result_info = "result[1]"}], sym_name = "main", sym_visibility = "public"}> ({
  ^bb0(%arg5: tensor<4x8xf32>, %arg6: tensor<8x16xf32>, %arg7: tensor<16xf32>, %arg8: tensor<16x5xf32>, %arg9: tensor<5xf32>):
    %13 = "stablehlo.dot_general"(%arg5, %arg6) <{dot_dimension_numbers = #stablehlo.dot<lhs_contracting_dimensions = [1], rhs_contracting_dimensions = [0]>, precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]}> : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
    %14 = "stablehlo.broadcast_in_dim"(%arg7) <{broadcast_dimensions = array<i64: 1>}> : (tensor<16xf32>) -> tensor<1x16xf32>
    %15 = "stablehlo.broadcast_in_dim"(%14) <{broadcast_dimensions = array<i64: 0, 1>}> : (tensor<1x16xf32>) -> tensor<4x16xf32>
    %16 = "stablehlo.add"(%13, %15) : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
    %17 = "stablehlo.multiply"(%16, %16) : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
    %18 = "stablehlo.multiply"(%17, %16) : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
    %19 = "stablehlo.constant"() <{value = dense<4.471500e-02> : tensor<f32>}> : () -> tensor<f32>
    %20 = "stablehlo.broadcast_in_dim"(%19) <{broadcast_dimensions = array<i64>}> : (tensor<f32>) -> tensor<4x16xf32>
    %21 = "stablehlo.multiply"(%20, %18) : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
    %22 = "stablehlo.add"(%16, %21) : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
    %23 = "stablehlo.constant"() <{value = dense<0.797884583> : tensor<f32>}> : () -> tensor<f32>
    %24 = "stablehlo.broadcast_in_dim"(%23) <{broadcast_dimensions = array<i64>}> : (tensor<f32>) -> tensor<4x16xf32>
    %25 = "stablehlo.multiply"(%24, %22) : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
    %26 = "stablehlo.tanh"(%25) : (tensor<4x16xf32>) -> tensor<4x16xf32>
    %27 = "stablehlo.constant"() <{value = dense<1.000000e+00> : tensor<f32>}> : () -> tensor<f32>
    %28 = "stablehlo.broadcast_in_dim"(%27) <{broadcast_dimensions = array<i64>}> : (tensor<f32>) -> tensor<4x16xf32>
    %29 = "stablehlo.add"(%28, %26) : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
    %30 = "stablehlo.constant"() <{value = dense<5.000000e-01> : tensor<f32>}> : () -> tensor<f32>
    %31 = "stablehlo.broadcast_in_dim"(%30) <{broadcast_dimensions = array<i64>}> : (tensor<f32>) -> tensor<4x16xf32>
    %32 = "stablehlo.multiply"(%31, %29) : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
    %33 = "stablehlo.multiply"(%16, %32) : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
    %34 = "stablehlo.dot_general"(%33, %arg8) <{dot_dimension_numbers = #stablehlo.dot<lhs_contracting_dimensions = [1], rhs_contracting_dimensions = [0]>, precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]}> : (tensor<4x16xf32>, tensor<16x5xf32>) -> tensor<4x5xf32>
    %35 = "stablehlo.broadcast_in_dim"(%arg9) <{broadcast_dimensions = array<i64: 1>}> : (tensor<5xf32>) -> tensor<1x5xf32>
    %36 = "stablehlo.broadcast_in_dim"(%35) <{broadcast_dimensions = array<i64: 0, 1>}> : (tensor<1x5xf32>) -> tensor<4x5xf32>
    %37 = "stablehlo.add"(%34, %36) : (tensor<4x5xf32>, tensor<4x5xf32>) -> tensor<4x5xf32>
    %38 = "stablehlo.constant"() <{value = dense<0xFF800000> : tensor<f32>}> : () -> tensor<f32>
    %39 = "stablehlo.reduce"(%37, %38) <{dimensions = array<i64: 1>}> ({
    ^bb0(%arg12: tensor<f32>, %arg13: tensor<f32>):
      %54 = "stablehlo.maximum"(%arg12, %arg13) : (tensor<f32>, tensor<f32>) -> tensor<f32>
      "stablehlo.return"(%54) : (tensor<f32>) -> ()
    %44 = "stablehlo.broadcast_in_dim"(%43) <{broadcast_dimensions = array<i64: 0, 1>}> : (tensor<4x1xf32>) -> tensor<4x5xf32>
    }) : (tensor<4x5xf32>, tensor<f32>) -> tensor<4xf32>
    %40 = "stablehlo.constant"() <{value = dense<0xFF800000> : tensor<f32>}> : () -> tensor<f32>
    %41 = "stablehlo.broadcast_in_dim"(%40) <{broadcast_dimensions = array<i64>}> : (tensor<f32>) -> tensor<4xf32>
    %42 = "stablehlo.maximum"(%41, %39) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    %43 = "stablehlo.broadcast_in_dim"(%42) <{broadcast_dimensions = array<i64: 0>}> : (tensor<4xf32>) -> tensor<4x1xf32>
    %44 = "stablehlo.broadcast_in_dim"(%43) <{broadcast_dimensions = array<i64: 0, 1>}> : (tensor<4x1xf32>) -> tensor<4x5xf32>
    %45 = "stablehlo.subtract"(%37, %44) : (tensor<4x5xf32>, tensor<4x5xf32>) -> tensor<4x5xf32>
    %46 = "stablehlo.exponential"(%45) : (tensor<4x5xf32>) -> tensor<4x5xf32>
    %47 = "stablehlo.constant"() <{value = dense<0.000000e+00> : tensor<f32>}> : () -> tensor<f32>
    %48 = "stablehlo.reduce"(%46, %47) <{dimensions = array<i64: 1>}> ({
    ^bb0(%arg10: tensor<f32>, %arg11: tensor<f32>):
      %53 = "stablehlo.add"(%arg10, %arg11) : (tensor<f32>, tensor<f32>) -> tensor<f32>
      "stablehlo.return"(%53) : (tensor<f32>) -> ()
    }) : (tensor<4x5xf32>, tensor<f32>) -> tensor<4xf32>
    %49 = "stablehlo.broadcast_in_dim"(%48) <{broadcast_dimensions = array<i64: 0>}> : (tensor<4xf32>) -> tensor<4x1xf32>
    %50 = "stablehlo.broadcast_in_dim"(%49) <{broadcast_dimensions = array<i64: 0, 1>}> : (tensor<4x1xf32>) -> tensor<4x5xf32>
    %51 = "stablehlo.divide"(%46, %50) : (tensor<4x5xf32>, tensor<4x5xf32>) -> tensor<4x5xf32>
    %52 = "func.call"(%37) <{callee = @argmax}> : (tensor<4x5xf32>) -> tensor<4xi32>
    "func.return"(%51, %52) : (tensor<4x5xf32>, tensor<4xi32>) -> ()
  }) : () -> ()
  "func.func"() <{function_type = (tensor<4x5xf32>) -> tensor<4xi32>, sym_name = "argmax", sym_visibility = "private"}> ({
  ^bb0(%arg0: tensor<4x5xf32>):
    %0 = "stablehlo.iota"() <{iota_dimension = 1 : i64}> : () -> tensor<4x5xi32>
    %1 = "stablehlo.constant"() <{value = dense<0xFF800000> : tensor<f32>}> : () -> tensor<f32>
    %2 = "stablehlo.constant"() <{value = dense<0> : tensor<i32>}> : () -> tensor<i32>
    %3:2147483648 = "stablehlo.reduce"(%arg0, %0, %1, %2) <{dimensions = array<i64: 1>}> ({
    ^bb0(%arg1: tensor<f32>, %arg2: tensor<i32>, %arg3: tensor<f32>, %arg4: tensor<i32>):
      %4 = "stablehlo.compare"(%arg1, %arg3) <{compare_type = #stablehlo<comparison_type FLOAT>, comparison_direction = #stablehlo<comparison_direction GT>}> : (tensor<f32>, tensor<f32>) -> tensor<i1>
      %5 = "stablehlo.compare"(%arg1, %arg1) <{compare_type = #stablehlo<comparison_type FLOAT>, comparison_direction = #stablehlo<comparison_direction NE>}> : (tensor<f32>, tensor<f32>) -> tensor<i1>
      %6 = "stablehlo.or"(%4, %5) : (tensor<i1>, tensor<i1>) -> tensor<i1>
      %7 = "stablehlo.compare"(%arg1, %arg3) <{compare_type = #stablehlo<comparison_type FLOAT>, comparison_direction = #stablehlo<comparison_direction EQ>}> : (tensor<f32>, tensor<f32>) -> tensor<i1>
      %8 = "stablehlo.compare"(%arg2, %arg4) <{compare_type = #stablehlo<comparison_type SIGNED>, comparison_direction = #stablehlo<comparison_direction LT>}> : (tensor<i32>, tensor<i32>) -> tensor<i1>
      %9 = "stablehlo.and"(%7, %8) : (tensor<i1>, tensor<i1>) -> tensor<i1>
      %10 = "stablehlo.or"(%6, %9) : (tensor<i1>, tensor<i1>) -> tensor<i1>
      %11 = "stablehlo.select"(%6, %arg1, %arg3) : (tensor<i1>, tensor<f32>, tensor<f32>) -> tensor<f32>
      %12 = "stablehlo.select"(%10, %arg2, %arg4) : (tensor<i1>, tensor<i32>, tensor<i32>) -> tensor<i32>
      "stablehlo.return"(%11, %12) : (tensor<f32>, tensor<i32>) -> ()
    }) : (tensor<4x5xf32>, tensor<4x5xi32>, tensor<f32>, tensor<i32>) -> (tensor<4xf32>, tensor<4xi32>)
    "func.return"(%3#1) : (tensor<4xi32>) -> ()
  }) : () -> ()
}) {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} : () -> ()
