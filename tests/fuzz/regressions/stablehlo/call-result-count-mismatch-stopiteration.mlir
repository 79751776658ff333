module @jit_loops attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<3x4xf32>, %arg1: tensor<4x4xf32>, %arg2: tensor<i32>) -> (tensor<3x4xf32> {jax.result_info = "result[0]"}, tensor<i32> {jax.result_info = "result[1]"}) {
    %c = stablehlo.constant dense<0> : tensor<i32>
    %c_0 = stablehlo.constant dense<0> : tensor<i32>
    %0:4 = stablehlo.while(%iterArg = %arg1, %iterArg_2 = %c_0, %iterArg_3 = %c, %iterArg_4 = %arg0) : tensor<4x4xf32>, tensor<i32>, tensor<i32>, tensor<3x4xf32>
    cond {
      %c_5 = stablehlo.constant dense<5> : tensor<i32>
      %2 = stablehlo.compare LT, %iterArg_2, %c_5, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
      stablehlo.return %2 : tensor<i1>
    } do {
      %2:2 = func.call @closed_call(%iterArg, %iterArg_3, %iterArg_4) : (tensor<4x4xf32>, tensor<i32>, tensor<3x4xf32>) -> (tensor<i32>, tensor<3x4xf32>)
      %c_5 = stablehlo.constant dense<1> : tensor<i32>
      %3 = stablehlo.add %iterArg_2, %c_5 : tensor<i32>
      stablehlo.return %iterArg, %3, %2#0, %2#1 : tensor<4x4xf32>, tensor<i32>, tensor<i32>, tensor<3x4xf32>
    }
    %c_1 = stablehlo.constant dense<0> : tensor<i32>
    %1:3 = stablehlo.while(%iterArg = %arg2, %iterArg_2 = %0#3, %iterArg_3 = %c_1) : tensor<i32>, tensor<3x4xf32>, tensor<i32>
    cond {
      %2 = stablehlo.abs %iterArg_2 : tensor<3x4xf32>
      %cst = stablehlo.constant dense<0xFF800000> : tensor<f32>
      %3 = stablehlo.reduce(%2 init: %cst) applies stablehlo.maximum across dimensions = [0, 1] : (tensor<3x4xf32>, tensor<f32>) -> tensor<f32>
      %cst_4 = stablehlo.constant dense<0.00999999977> : tensor<f32>
      %4 = stablehlo.compare GT, %3, %cst_4, FLOAT : (tensor<f32>, tensor<i1>) -> tensor<i1>
      %5 = stablehlo.compare LT, %iterArg_3, %iterArg, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
      %6 = stablehlo.and %4, %5 : tensor<i1>
      stablehlo.return %6 : tensor<i1>
    } do {
      %cst = stablehlo.constant dense<5.000000e-01> : tensor<f32>
      %2 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<3x4xf32>
      %3 = stablehlo.multiply %iterArg_2, %2 : tensor<3x4xf32>
      %c_4 = stablehlo.constant dense<1> : tensor<i32>
      %4 = stablehlo.add %iterArg_3, %c_4 : tensor<i32>
      stablehlo.return %iterArg, %3, %4 : tensor<i32>, tensor<3x4xf32>, tensor<i32>
    }
    return %1#1, %1#2 : tensor<3x4xf32>, tensor<i32>
  }
  func.func private @closed_call(%arg0: tensor<4x4xf32>, %arg1: tensor<i32>, %arg2: tensor<3x4xf32>) -> (tensor<i32>, tensor<3x4xf32>) {
    %c = stablehlo.constant dense<1> : tensor<i32>
    %0 = stablehlo.add %arg1, %c : tensor<i32>
    %1 = stablehlo.dot_general %arg2, %arg0, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<3x4xf32>, tensor<4x4xf32>) -> tensor<3x4xf32>
    %2 = stablehlo.tanh %1 : tensor<3x4xf32>
    %3 = stablehlo.convert %arg1 : (tensor<i32>) -> tensor<f32>
      stablehlo.return %2 : tensor<i1>
    %4 = stablehlo.broadcast_in_dim %3, dims = [] : (tensor<f32>) -> tensor<3x4xf32>
    %5 = stablehlo.add %2, %4 : tensor<3x4xf32>
    return %0, %5 : tensor<i32>, tensor<3x4xf32>
  }
}
