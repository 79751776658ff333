module @jit_cond_switch attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<3x3xf32>, %arg1: tensor<i32>) -> (tensor<i1> {jax.result_info = "result[0]"}, tensor<3x3xf32> {jax.result_info = "result[1]"}) {
    %0 = stablehlo.slice %arg0 [0:1, 0:1] : (tensor<3x3xf32>) -> tensor<1x1xf32>
    %1 = stablehlo.reshape %0 : (tensor<1x1xf32>) -> tensor<f32>
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %2 = stablehlo.compare GT, %1, %cst, FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
    %3 = stablehlo.convert %2 : (tensor<i1>) -> tensor<i32>
    %4 = "stablehlo.case"(%3) ({
      %7 = stablehlo.cosine %arg0 : tensor<3x3xf32>
      stablehlo.return %7 : tensor<3x3xf32>
    }, {
      %cst_1 = stablehlo.constant dense<3.000000e+00> : tensor<f32>
      %7 = stablehlo.broadcast_in_dim %cst_1, dims = [] : (tensor<f32>) -> tensor<3x3xf32>
      %8 = stablehlo.multiply %arg0, %7 : tensor<3x3xf32>
      stablehlo.return %8 : tensor<3x3xf32>
    }) : (tensor<i32>) -> tensor<3x3xf32>
    %c = stablehlo.constant dense<0> : tensor<i32>
    %c_0 = stablehlo.constant dense<3> : tensor<i32>
    %5 = stablehlo.clamp %c, %arg1, %c_0 : tensor<i32>
    %6 = "stablehlo.case"(%5) ({
      %cst_1 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
      %7 = stablehlo.broadcast_in_dim %cst_1, dims = [] : (tensor<f32>) -> tensor<3x3xf32>
      %8 = stablehlo.subtract %arg0, %7 : tensor<3x3xf32>
      stablehlo.return %8 : tensor<3x3xf32>
    }, {
      %7 = stablehlo.exponential %arg0 : tensor<3x3xf32>
      stablehlo.return %7 : tensor<3x3xf32>
    }, {
      %7 = stablehlo.dot_general %arg0, %arg0, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<3x3xf32>, tensor<3x3xf32>) -> tensor<3x3xf32>
      stablehlo.return %7 : tensor<3x3xf32>
    }, {
      %7 = stablehlo.negate %arg0 : tensor<3x3xf32>
      stablehlo.return %7 : tensor<3x3xf32>
    }) : (tensor<i32>) -> tensor<3x3xf32>
    return %4, %6 : tensor<3x3xf32>, tensor<3x3xf32>
  }
}
