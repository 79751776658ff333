"""The bundled runtime: loads NEFFs and executes them on simulated NeuronCores."""
